// SPDX-License-Identifier: BSL-1.0
/// @file
/// The example server's MCP App (docs/apps.md): `weather_card` shows a city's weather
/// in an HTML view a host renders, and the view asks the server again through the
/// app-only tool `weather_refresh`. Written with the public API only.
#pragma once

#include <droid/droid.hpp>

/// Registers the view `ui://everything/weather-card` and its two tools on `server`.
/// `with_view` false registers `weather_card` alone, linked to no view: what a server
/// without Apps offers, and what a host shows as text either way.
void register_weather_app(droid::server& server, bool with_view);
