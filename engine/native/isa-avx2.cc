// The avx2 path (binding.gyp gives this file its target flags): isa-body.h's ops in namespace iwi::avx2.
#define IWI_PATH avx2
#define IWI_PATH_NAME "avx2"
#include "isa-body.h"
