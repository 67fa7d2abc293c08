// SPDX-License-Identifier: BSL-1.0
/// @file
/// `droid::uri_template`: RFC 6570 URI templates, levels 1 and 2, expanded and matched.
///
/// Domain layer. An MCP server advertises resource templates such as
/// `repo://{owner}/{repo}/issues/{number}` in `resources/templates/list`. A client fills
/// one in and sends `resources/read` with the finished URI. The server then has to run
/// the template backwards to find which handler owns the URI and with which values.
/// `expand` and `match` are written as exact inverses over the same grammar. The property
/// `match(expand(v)) == v` holds for every value map (see "Round trips" for the one
/// exception). A test pins it for the templates MCP servers actually publish.
///
/// ## Why only levels 1 and 2
/// Levels 3 and 4 add lists, prefixes and exploded composites (`{/a,b}`, `{?q*}`,
/// `{var:3}`). Expanding them is routine. Matching them has no unique inverse:
/// `{a,b}` against `x,y,z` has two answers, and a `{var:3}` prefix loses information.
/// Every MCP template we have seen uses `{var}` or `{+var}`. So a template that reaches
/// further is refused when it is constructed, in words that say so. The server author
/// finds out when registering the template, and no client ever gets a wrong or silently
/// partial match.
///
/// ## What `match` accepts
/// A URI matches when it could have come out of `expand`, with one kind of slack: the
/// spelling of a percent-encoded triplet. `%7e` and `%7E` both decode to `~`, and so does
/// a needlessly encoded `%41` (to `A`). A client's encoder chooses the case of the hex
/// digits, and the value it meant is the same either way.
/// - **Literal text** must appear exactly as `expand` writes it. A non-ASCII literal
///   (`café/{x}`) is therefore matched in its encoded form (`caf%C3%A9/`).
/// - **`{var}`** spans only unreserved characters (`A-Z a-z 0-9 - . _ ~`) and `%XX`
///   triplets, because simple expansion encodes everything else. So `{id}` never
///   reaches across a `/`, `?` or `#` in the URI. A client that sends `%2F` still
///   gets a `/` in the decoded value: values are untrusted input.
/// - **`{+var}`** also spans reserved characters (`:/?#[]@!$&'()*+,;=`), so
///   `file:///{+path}` takes the whole path.
/// - **`{#var}`** is either nothing (the variable was undefined) or a `#` followed by
///   what `{+var}` spans.
/// - Nothing spans a space, a raw non-ASCII byte or a `%` that does not start a
///   triplet, because no expansion produces one.
///
/// ## Decisions
/// - **Every returned value is percent-decoded, including `{+var}` and `{#var}`.** The
///   alternative is raw text for `{+var}`. That would hand a file handler `my%20docs`
///   from `file:///{+path}` but `my docs` from `file:///{name}`, for the same URI text.
///   The price: `%2F` and `/` both come back as `/`. Reserved expansion passes triplets
///   through unchanged, so it already maps `a%2Fb` and `a/b` to different URIs that
///   cannot be told apart after decoding. A handler that needs the raw spelling still
///   has the URI itself.
/// - **Every returned value is valid UTF-8.** A span whose triplets decode to anything
///   else (`%FF`, a lone `%C3`, an encoded surrogate) is not a value, so
///   `test://template/%FF/data` does not match `test://template/{id}/data`. Why here and
///   not in each handler: a handler echoes its values into text content, JSON text must
///   be UTF-8, and `expand` of a UTF-8 value never writes such a span. Leftmost-shortest
///   (below) is taken over the readings whose values are all UTF-8.
/// - **Empty values match.** RFC 6570 expands `""` to nothing, so
///   `test://template//data` is an expansion of `test://template/{id}/data`, and
///   matching it gives `id == ""`. Refusing empty values would break the round trip for
///   a value the RFC defines. Handlers that need a non-empty id must check for it; MCP
///   clients normally send one. An expression that matched nothing reports `""`.
///   Expansion cannot tell undefined from empty there, and handlers look values up by
///   name.
/// - **The one absent value.** A variable is absent from the result only when every
///   expression it appears in is `{#var}` and the URI has no `#` at that point. That is
///   the one case where expansion does distinguish undefined from empty: `{#var}` writes
///   `#` for `""` and nothing for undefined.
/// - **Several decompositions resolve leftmost-shortest.** From left to right, each
///   expression takes the shortest text that still lets the rest of the template
///   match. `{+a}/{+b}` against `x/y/z` gives `a = "x"`, `b = "y/z"`. `{+a}{+b}`
///   against `xy` gives `a = ""`, `b = "xy"`.
/// - **A repeated variable must decode to the same value at each occurrence.** That is
///   `{a}-{a}` matches `1-1` and not `1-2`. Zero-length `{a}` is compatible with both
///   `""` and undefined.
///
/// ## Round trips
/// `match(expand(v)) == v` for every map `v` whose keys are the template's variables,
/// with two exceptions. First, a `{+var}`/`{#var}` value that already contains a `%XX`
/// sequence: the RFC keeps triplets in reserved expansion on purpose, so that `v` reads
/// back decoded, and when the decoded bytes are not UTF-8 (`%B4`) the expansion does not
/// match at all. Second, a value made ambiguous by adjacent expressions (`{a}{b}`),
/// which reads back leftmost-shortest. A variable missing from `v` reads back as `""`,
/// unless it appears only in `{#var}` (see "The one absent value"). Conversely, `expand(match(u))` gives back `u`,
/// up to the spelling of triplets.
///
/// ## Cost
/// A template with no repeated variable matches in O(parts × length of uri) time and
/// space, with no backtracking. The feasibility table built first guarantees that each
/// shortest choice can be completed. A repeated variable can force backtracking over the
/// earlier choices, and in general that search is exponential (`{a}{b}{c}{d}{a}{b}{c}{d}`
/// against a run of one letter). So the search stops after `step_limit(uri.size())`
/// steps, which is linear in parts × URI length, and reports no match. That can refuse a
/// URI that does match, but only one that makes a repeated template backtrack that far,
/// which no expansion an MCP client sends does; one `resources/read` cannot stall a
/// shard.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace droid {

/// A parsed RFC 6570 URI template restricted to levels 1 and 2: literal text,
/// `{var}`, `{+var}` and `{#var}`.
///
/// **Why:** without it, each resource handler splits URIs by hand. Then `{id}` matches
/// across `/`, percent-encoding is decoded in one handler and not the next, and
/// `resources/templates/list` advertises a template the router does not actually follow.
///
/// *Invariants:* `text()` is the string it was constructed from. Every variable named
/// by an expression appears in `variables()` exactly once, at its first appearance.
/// *Affinity:* immutable after construction, so any thread may use a shared instance.
/// *Lifetime:* a value type that owns its text. Views returned by `text()` live as long
/// as the object.
class uri_template {
 public:
  /// Variable values by name. Undefined variables are simply absent. `std::less<>` lets
  /// callers look up with a `string_view` without building a string.
  using value_map = std::map<std::string, std::string, std::less<>>;

  /// Parses `text`, refusing anything outside RFC 6570 levels 1 and 2.
  ///
  /// Why it throws instead of returning `droid::result`: a template is server
  /// configuration, checked once at registration. The error model
  /// (docs/conventions.md#error-model) reports misconfiguration with exceptions, and the
  /// message is what the server author reads.
  ///
  /// **Errors** (`std::invalid_argument`, whose message quotes the template and gives
  /// the byte offset):
  /// - an expression that is never closed, or a `}` that closes nothing;
  /// - an empty expression `{}`;
  /// - a level 3 operator (`.` `/` `;` `?` `&`) or a reserved one (`=` `,` `!` `@` `|`);
  /// - a variable list (`{a,b}`), a prefix (`{var:3}`) or an explode (`{var*}`), which
  ///   belong to levels 3 and 4;
  /// - a variable name outside RFC 6570's `varname` grammar (letters, digits, `_`,
  ///   `%XX`, and single dots between them);
  /// - a literal character the RFC's `literals` rule excludes (space, control
  ///   characters, `"`, `'`, `<`, `>`, `\`, `^`, `` ` ``, `|`, a `%` that does not
  ///   start a triplet), malformed UTF-8, or a code point outside `ucschar`/`iprivate`.
  explicit uri_template(std::string_view text);

  /// The URI that RFC 6570 section 3 produces from `values`.
  ///
  /// - `{var}` percent-encodes every byte except the unreserved ones.
  /// - `{+var}` also keeps reserved characters and well-formed `%XX` triplets.
  /// - `{#var}` is `{+var}` with a leading `#`.
  /// - An absent variable expands to nothing, including the `#` of `{#var}`; an empty
  ///   one expands to nothing, but `{#var}` still writes its `#`.
  /// - Keys that name no variable of the template are ignored.
  /// - Non-ASCII literal text is written percent-encoded as UTF-8 (RFC 6570 section 3.1).
  [[nodiscard]] std::string expand(const value_map& values) const;

  /// The variable values for which `expand` gives `uri`, or `std::nullopt` when no values
  /// would. The header comment describes what is accepted, how values are decoded, and
  /// how ambiguity is resolved.
  [[nodiscard]] std::optional<value_map> match(std::string_view uri) const;

  /// `match(uri)`, adding to `steps` the work its search did: one step per span end
  /// considered and one per byte bound to a variable. For tests that pin the bound, and
  /// for servers that want to see what a URI cost.
  [[nodiscard]] std::optional<value_map> match(std::string_view uri, std::size_t& steps) const;

  /// The most steps `match` spends on a URI of `uri_size` bytes before it gives up with
  /// no match: 16 × (parts + 1) × (uri_size + 1), plus a floor of 65536 for the short
  /// backtracking of repeated variables.
  [[nodiscard]] std::size_t step_limit(std::size_t uri_size) const noexcept;

  /// The template exactly as constructed, which is what `resources/templates/list`
  /// advertises.
  [[nodiscard]] std::string_view text() const noexcept { return text_; }

  /// Variable names in order of first appearance, each once.
  [[nodiscard]] const std::vector<std::string>& variables() const noexcept { return variables_; }

 private:
  enum class part_kind : unsigned char { literal, simple, reserved, fragment };

  /// One piece of the template. For a literal, `text` is already in expanded (encoded)
  /// form, so `expand` and `match` both use it as is. For an expression, `text` is the
  /// variable name and `variable` is its index in `variables_`.
  struct part {
    part_kind kind = part_kind::literal;
    std::string text{};
    std::size_t variable = 0;
  };

  std::string text_;
  std::vector<part> parts_{};
  std::vector<std::string> variables_{};
};

}  // namespace droid
