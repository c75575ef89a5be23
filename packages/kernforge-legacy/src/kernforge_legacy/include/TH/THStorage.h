/* TH/THStorage.h, where 2017 code included it from: all that kernforge-legacy
 * provides of TH is declared in TH.h. */
#include "TH.h"
