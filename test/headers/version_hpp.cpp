// SPDX-License-Identifier: BSL-1.0
// Self-containment TU of the generated <droid/version.hpp> (configure_file'd into the
// build tree, so it is not in droid_public_headers); same shape as the generated TUs.
#include <droid/version.hpp>
#include <droid/version.hpp>
