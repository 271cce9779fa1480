#include "sparsetrain/core/error.h"
