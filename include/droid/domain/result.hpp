// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::result<T>`: the one fallible return shape of the framework.
///
/// Why `boost::system::result` and not `std::expected`: g++ 12 offers `std::expected`
/// only under C++23, and a second shape (throwing plus `error_code&` overloads, as Asio
/// does) doubles every API. When the project moves to C++23 this alias is the one line
/// that changes.
#pragma once

#include <system_error>

#include <boost/system/result.hpp>

namespace droid {

/// A `T`, or the `std::error_code` that says why there is none.
template <class T>
using result = boost::system::result<T, std::error_code>;

}  // namespace droid
