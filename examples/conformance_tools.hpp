// SPDX-License-Identifier: BSL-1.0
/// @file
/// The names and behaviours the official MCP conformance suite
/// (`@modelcontextprotocol/conformance`) expects of the server it tests: the `test_*`
/// tools, the `test://` resources and template, the `test_*` prompts and their completion,
/// `test_reconnection` and `json_schema_2020_12_tool`. `scripts/conformance` runs the
/// suite against everything-server, which registers them with `register_conformance`.
///
/// Written with the public API only: each registration is also a small example of one
/// feature (content blocks, progress, logging, sampling, elicitation, stream resumption,
/// raw JSON Schema, resources, templates, prompts, completion).
#pragma once

#include <droid/droid.hpp>

/// Registers every conformance fixture on `server`.
void register_conformance(droid::server& server);
/// The multi round-trip fixtures (`test_input_required_result_*`, conformance_rounds.cpp);
/// `register_conformance` calls it.
void register_input_required_fixtures(droid::server& server);
/// The task fixtures (`greet`, `slow_compute`, `failing_job`, `protocol_error_job`,
/// `confirm_delete`, `multi_input`, `test_tool_with_task`: conformance_tasks.cpp);
/// `register_conformance` calls it.
void register_task_fixtures(droid::server& server);
