// The avx512 path (binding.gyp gives this file its target flags): isa-body.h's ops in namespace iwi::avx512.
#define IWI_PATH avx512
#define IWI_PATH_NAME "avx512"
#include "isa-body.h"
