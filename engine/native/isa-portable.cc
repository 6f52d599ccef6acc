// The portable path (binding.gyp gives this file its target flags): isa-body.h's ops in namespace iwi::portable.
#define IWI_PATH portable
#define IWI_PATH_NAME "portable"
#include "isa-body.h"
