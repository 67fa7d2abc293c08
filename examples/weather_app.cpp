// SPDX-License-Identifier: BSL-1.0
/// @file
/// The example server's MCP App: one view and the two tools that feed it (weather_app.hpp).
#include "weather_app.hpp"

#include <string>
#include <string_view>

#include <boost/describe.hpp>

#include <droid/application/extensions/apps.hpp>

namespace {

struct city_args {
  std::string city;
};
BOOST_DESCRIBE_STRUCT(city_args, (), (city))

/// What the view draws; the text block says the same for hosts without Apps.
struct weather {
  std::string city;
  int degrees = 0;
  std::string conditions;
  bool refreshed = false;
};
BOOST_DESCRIBE_STRUCT(weather, (), (city, degrees, conditions, refreshed))

constexpr std::string_view view_uri = "ui://everything/weather-card";

/// A made-up reading, the same for the same city (tests compare it).
weather reading_for(const std::string& city, bool refreshed) {
  int h = 0;
  for (const char c : city) h = (h * 31 + static_cast<unsigned char>(c)) % 1000;
  static constexpr std::string_view skies[] = {"sunny", "cloudy", "rainy", "windy"};
  return weather{city, 12 + h % 15, std::string(skies[h % 4]), refreshed};
}

droid::tool_result as_result(const weather& w) {
  std::string text = w.city + ": " + std::to_string(w.degrees) + " °C, " + w.conditions;
  if (w.refreshed) text += " (refreshed)";
  droid::tool_result r = droid::tool_result::text(text);
  r.structured(droid::to_json_value(w).as_object());
  return r;
}

/// The view: a plain HTML page that speaks the Apps protocol (JSON-RPC over postMessage)
/// by hand, so it needs nothing from outside the document. It shakes hands with
/// `ui/initialize`, draws the tool's input and result as the host sends them, and on a
/// click asks the host to call `weather_refresh` on this server.
constexpr std::string_view view_html = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Weather card</title>
<style>
  body { font-family: var(--font-sans, sans-serif); margin: 12px; color: var(--color-text-primary, #171717); }
  .reading { font-size: 1.4em; margin: 0 0 8px; }
</style>
</head>
<body>
<p class="reading"><span id="city">…</span>: <span id="reading">waiting for the tool's result</span></p>
<button id="refresh" disabled>Refresh</button>
<p id="refreshed"></p>
<script>
  let nextId = 1;
  const pending = new Map();
  let city = "";
  const send = (message) => window.parent.postMessage(message, "*");
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    send({ jsonrpc: "2.0", id, method, params });
  });
  const describe = (result) => {
    const w = result && result.structuredContent;
    if (w) return w.degrees + " °C, " + w.conditions + (w.refreshed ? " (refreshed)" : "");
    const block = result && result.content && result.content[0];
    return block && block.type === "text" ? block.text : "no reading";
  };
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const m = event.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.method === undefined && m.id !== undefined) {
      const waiting = pending.get(m.id);
      if (!waiting) return;
      pending.delete(m.id);
      if (m.error) waiting.reject(new Error(m.error.message));
      else waiting.resolve(m.result);
      return;
    }
    if (m.method === "ui/notifications/tool-input") {
      city = (m.params && m.params.arguments && m.params.arguments.city) || "";
      document.getElementById("city").textContent = city;
    } else if (m.method === "ui/notifications/tool-result") {
      document.getElementById("reading").textContent = describe(m.params);
      document.getElementById("refresh").disabled = false;
    } else if (m.id !== undefined) {
      // A request this view has nothing to add to (ping, ui/resource-teardown).
      send({ jsonrpc: "2.0", id: m.id, result: {} });
    }
  });
  document.getElementById("refresh").addEventListener("click", async () => {
    const out = document.getElementById("refreshed");
    try {
      const result = await request("tools/call", { name: "weather_refresh", arguments: { city } });
      out.textContent = describe(result);
    } catch (error) {
      out.textContent = "refresh failed: " + error.message;
    }
  });
  request("ui/initialize", {
    protocolVersion: "2026-01-26",
    appInfo: { name: "weather-card", version: "1.0.0" },
    appCapabilities: {},
  }).then(() => send({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }));
</script>
</body>
</html>
)html";

}  // namespace

void register_weather_app(droid::server& server, bool with_view) {
  droid::tool_info card{.name = "weather_card",
                        .title = "Weather card",
                        .description = "Today's (made-up) weather for a city, shown as a card where the host renders MCP "
                                       "Apps and as text elsewhere"};
  if (with_view) {
    droid::apps::add_view(server, droid::apps::view{.uri = std::string(view_uri),
                                                    .name = "weather-card",
                                                    .description = "A card with a city's weather and a refresh button",
                                                    .html = std::string(view_html),
                                                    .prefers_border = true});
    card.meta = droid::apps::tool_meta(view_uri);
  }
  server.tool(std::move(card), [](droid::tool_context&, city_args a) -> droid::task<droid::tool_result> {
    co_return as_result(reading_for(a.city, false));
  });
  if (!with_view) return;
  // Only the view calls it: a host keeps it out of the agent's tool list.
  server.tool(droid::tool_info{.name = "weather_refresh",
                               .description = "Reads a city's weather again, for the weather card's button",
                               .meta = droid::apps::tool_meta(view_uri, droid::apps::visibility::app_only)},
              [](droid::tool_context&, city_args a) -> droid::task<droid::tool_result> {
                co_return as_result(reading_for(a.city, true));
              });
}
