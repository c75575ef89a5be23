/* THC/THCStream.h, where 2017 code included it from: all that kernforge-legacy
 * provides of THC is declared in THC.h. */
#include "THC.h"
