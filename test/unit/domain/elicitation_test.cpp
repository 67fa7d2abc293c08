// SPDX-License-Identifier: BSL-1.0
/// @file
/// Form-mode elicitation schemas from described structs, and decoding of what the user
/// submits. The expected texts are what goes on the wire (`ir::to_json_text`), key order
/// included, so a change to any keyword shows up here before a client sees it.
#include <droid/domain/mcp/elicitation.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include <boost/describe.hpp>
#include <boost/json/parse.hpp>

#include <droid/domain/ir/codec.hpp>

namespace {

enum class topic { news, sport, weather };
BOOST_DESCRIBE_ENUM(topic, news, sport, weather)

enum class size { s, m, l };
BOOST_DESCRIBE_ENUM(size, s, m, l)

enum class legacy_option { opt1, opt2, opt3 };
BOOST_DESCRIBE_ENUM(legacy_option, opt1, opt2, opt3)

struct profile {
  std::string username;
  std::string email;
  std::string website;
  std::string birthday;
  std::string meeting;
  int age = 0;
  double height = 0;
  bool subscribe = false;
};
BOOST_DESCRIBE_STRUCT(profile, (), (username, email, website, birthday, meeting, age, height, subscribe))

struct selections {
  topic one_topic = topic::news;
  size one_size = size::s;
  legacy_option one_legacy = legacy_option::opt1;
  std::vector<topic> topics;
  std::vector<size> sizes;
  std::vector<legacy_option> legacies;
};
BOOST_DESCRIBE_STRUCT(selections, (), (one_topic, one_size, one_legacy, topics, sizes, legacies))

struct preferences {
  std::string nickname = "Ann";
  std::int64_t seats = 2;
  float ratio = 0.25f;
  bool dark = true;
  topic feed = topic::weather;
  size fit = size::m;
  std::vector<topic> topics = {topic::news, topic::sport};
  std::vector<size> extra = {size::l};
  std::optional<std::string> motto = "carpe diem";
  std::optional<int> lucky;
};
BOOST_DESCRIBE_STRUCT(preferences, (), (nickname, seats, ratio, dark, feed, fit, topics, extra, motto, lucky))

struct ticket {
  std::string title;
  std::optional<std::string> note;
  int priority = 3;
  std::optional<topic> area;
  std::optional<std::vector<topic>> tags;
  std::vector<topic> watchers;
};
BOOST_DESCRIBE_STRUCT(ticket, (), (title, note, priority, area, tags, watchers))

// The conformance suite's forms (README section 4.5). Members carry the wire names the
// suite checks, hence not snake_case.
enum class user_status { active, inactive, pending };
BOOST_DESCRIBE_ENUM(user_status, active, inactive, pending)

struct sep1034_form {
  std::string name = "John Doe";
  int age = 30;
  double score = 95.5;
  user_status status = user_status::active;
  bool verified = true;
};
BOOST_DESCRIBE_STRUCT(sep1034_form, (), (name, age, score, status, verified))

enum class untitled_option { option1, option2, option3 };
BOOST_DESCRIBE_ENUM(untitled_option, option1, option2, option3)
// Two enums with the same values: the reference titles them "… Option" in the single
// select and "… Choice" in the multi select, and titles belong to an enum.
enum class titled_value { value1, value2, value3 };
BOOST_DESCRIBE_ENUM(titled_value, value1, value2, value3)
enum class titled_choice { value1, value2, value3 };
BOOST_DESCRIBE_ENUM(titled_choice, value1, value2, value3)

struct sep1330_form {
  std::optional<untitled_option> untitledSingle;
  std::optional<titled_value> titledSingle;
  std::optional<legacy_option> legacyEnum;
  std::optional<std::vector<untitled_option>> untitledMulti;
  std::optional<std::vector<titled_choice>> titledMulti;
};
BOOST_DESCRIBE_STRUCT(sep1330_form, (), (untitledSingle, titledSingle, legacyEnum, untitledMulti, titledMulti))

/// One struct per misuse, so each can carry its own wrong hints.
template <int N>
struct misuse {
  std::string text;
  int count = 0;
  std::uint8_t small = 0;
  double ratio = 0;
  std::vector<topic> tags;
  BOOST_DESCRIBE_CLASS(misuse, (), (text, count, small, ratio, tags), (), ())
};

enum class missing_title { a, b };
BOOST_DESCRIBE_ENUM(missing_title, a, b)
enum class double_title { a, b };
BOOST_DESCRIBE_ENUM(double_title, a, b)
enum class stray_title { a, b };
BOOST_DESCRIBE_ENUM(stray_title, a, b)

struct titled_misuse {
  missing_title missing = missing_title::a;
  std::vector<double_title> doubled;
  stray_title stray = stray_title::a;
};
BOOST_DESCRIBE_STRUCT(titled_misuse, (), (missing, doubled, stray))

}  // namespace

template <>
struct droid::enum_titles<size> {
  static constexpr std::pair<size, std::string_view> titles[] = {
      {size::s, "Small"}, {size::m, "Medium"}, {size::l, "Large"}};
};
template <>
struct droid::enum_titles<legacy_option> {
  static constexpr std::pair<legacy_option, std::string_view> titles[] = {
      {legacy_option::opt1, "Option One"}, {legacy_option::opt2, "Option Two"}, {legacy_option::opt3, "Option Three"}};
  static constexpr bool legacy_enum_names = true;
};
template <>
struct droid::enum_titles<titled_value> {
  static constexpr std::pair<titled_value, std::string_view> titles[] = {{titled_value::value1, "First Option"},
                                                                         {titled_value::value2, "Second Option"},
                                                                         {titled_value::value3, "Third Option"}};
};
template <>
struct droid::enum_titles<titled_choice> {
  static constexpr std::pair<titled_choice, std::string_view> titles[] = {{titled_choice::value1, "First Choice"},
                                                                          {titled_choice::value2, "Second Choice"},
                                                                          {titled_choice::value3, "Third Choice"}};
};
template <>
struct droid::enum_titles<missing_title> {
  static constexpr std::pair<missing_title, std::string_view> titles[] = {{missing_title::a, "A"}};
};
template <>
struct droid::enum_titles<double_title> {
  static constexpr std::pair<double_title, std::string_view> titles[] = {
      {double_title::a, "A"}, {double_title::b, "B"}, {double_title::a, "Again"}};
};
template <>
struct droid::enum_titles<stray_title> {
  static constexpr std::pair<stray_title, std::string_view> titles[] = {
      {stray_title::a, "A"}, {stray_title::b, "B"}, {static_cast<stray_title>(7), "Seven"}};
};

template <>
struct droid::elicit_hints<profile> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "username", .title = "Username", .description = "Your account name", .min_length = 3, .max_length = 20},
      {.name = "email", .format = "email"},
      {.name = "website", .format = "uri"},
      {.name = "birthday", .format = "date"},
      {.name = "meeting", .format = "date-time"},
      {.name = "age", .title = "Age", .minimum = 0, .maximum = 150},
      {.name = "height", .minimum = 0.5, .maximum = 2.5},
      {.name = "subscribe", .title = "Subscribe", .description = "Send me news"},
  };
};

template <>
struct droid::elicit_hints<selections> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "one_size", .title = "Size"},
      {.name = "topics", .description = "Pick some", .min_items = 1, .max_items = 2},
      {.name = "sizes", .min_items = 0, .max_items = 3},
  };
};

template <>
struct droid::elicit_hints<preferences> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "nickname", .defaulted = true}, {.name = "seats", .defaulted = true},
      {.name = "ratio", .defaulted = true},    {.name = "dark", .defaulted = true},
      {.name = "feed", .defaulted = true},     {.name = "fit", .defaulted = true},
      {.name = "topics", .defaulted = true},   {.name = "extra", .defaulted = true},
      {.name = "motto", .defaulted = true},    {.name = "lucky", .defaulted = true},
  };
};

template <>
struct droid::elicit_hints<ticket> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "title", .min_length = 3, .max_length = 20},
      {.name = "priority", .defaulted = true, .minimum = 1, .maximum = 5},
      {.name = "tags", .max_items = 2},
  };
};

template <>
struct droid::elicit_hints<sep1034_form> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "name", .description = "User name", .defaulted = true},
      {.name = "age", .description = "User age", .defaulted = true},
      {.name = "score", .description = "User score", .defaulted = true},
      {.name = "status", .description = "User status", .defaulted = true},
      {.name = "verified", .description = "Verification status", .defaulted = true},
  };
};

template <>
struct droid::elicit_hints<sep1330_form> {
  static constexpr droid::elicit_field fields[] = {
      {.name = "untitledSingle", .description = "Select one option"},
      {.name = "titledSingle", .description = "Select one option with titles"},
      {.name = "legacyEnum", .description = "Select one option (legacy)"},
      {.name = "untitledMulti", .description = "Select multiple options", .min_items = 1, .max_items = 3},
      {.name = "titledMulti", .description = "Select multiple options with titles", .min_items = 1, .max_items = 3},
  };
};

template <> struct droid::elicit_hints<misuse<1>> { static constexpr droid::elicit_field fields[] = {{.name = "txt"}}; };
template <> struct droid::elicit_hints<misuse<2>> { static constexpr droid::elicit_field fields[] = {{.name = "text"}, {.name = "text"}}; };
template <> struct droid::elicit_hints<misuse<3>> { static constexpr droid::elicit_field fields[] = {{.name = "text", .format = "phone"}}; };
template <> struct droid::elicit_hints<misuse<4>> { static constexpr droid::elicit_field fields[] = {{.name = "count", .format = "email"}}; };
template <> struct droid::elicit_hints<misuse<5>> { static constexpr droid::elicit_field fields[] = {{.name = "count", .max_length = 3}}; };
template <> struct droid::elicit_hints<misuse<6>> { static constexpr droid::elicit_field fields[] = {{.name = "text", .minimum = 1}}; };
template <> struct droid::elicit_hints<misuse<7>> { static constexpr droid::elicit_field fields[] = {{.name = "text", .min_items = 1}}; };
template <> struct droid::elicit_hints<misuse<8>> { static constexpr droid::elicit_field fields[] = {{.name = "count", .minimum = 5, .maximum = 1}}; };
template <> struct droid::elicit_hints<misuse<9>> { static constexpr droid::elicit_field fields[] = {{.name = "text", .min_length = 5, .max_length = 1}}; };
template <> struct droid::elicit_hints<misuse<10>> { static constexpr droid::elicit_field fields[] = {{.name = "tags", .min_items = 3, .max_items = 2}}; };
template <> struct droid::elicit_hints<misuse<11>> { static constexpr droid::elicit_field fields[] = {{.name = "count", .minimum = 0.5}}; };
template <> struct droid::elicit_hints<misuse<12>> { static constexpr droid::elicit_field fields[] = {{.name = "small", .maximum = 300}}; };
template <> struct droid::elicit_hints<misuse<13>> { static constexpr droid::elicit_field fields[] = {{.name = "ratio", .maximum = std::numeric_limits<double>::infinity()}}; };
template <> struct droid::elicit_hints<misuse<14>> { static constexpr droid::elicit_field fields[] = {{.name = "count", .defaulted = true, .minimum = 1}}; };
template <> struct droid::elicit_hints<misuse<15>> { static constexpr droid::elicit_field fields[] = {{.name = "tags", .max_items = 1}, {.name = "ratio", .minimum = 1}}; };

namespace {

/// The schema of `T` as the text a client receives.
template <class T>
std::string schema_text() {
  return droid::ir::to_json_text(droid::elicitation_schema<T>());
}

/// The message `elicitation_schema<T>()` throws, or "" when it does not throw.
template <class T>
std::string refusal() {
  try {
    (void)droid::elicitation_schema<T>();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

/// Decodes `json` into `out` with `decode_elicited` (or `droid::decode` when `plain`).
template <class T>
bool decode_text(const std::string& json, T& out, std::string& error, bool plain = false) {
  bool ok = false;
  const auto ec = droid::ir::visit_json(json, [&](const droid::ir::json_node& n) {
    ok = plain ? droid::decode(n, out, error) : droid::decode_elicited(n, out, error);
  });
  REQUIRE_FALSE(ec);
  return ok;
}

}  // namespace

TEST_SUITE("domain/mcp/elicitation") {
  TEST_CASE("each primitive kind states its title, description and every constraint it can carry") {
    // Every keyword of StringSchema, NumberSchema and BooleanSchema in one form: a
    // keyword dropped or renamed here is a form field a client silently stops checking.
    CHECK(schema_text<profile>() ==
          R"({"type":"object","properties":{)"
          R"("username":{"type":"string","title":"Username","description":"Your account name","minLength":3,"maxLength":20},)"
          R"("email":{"type":"string","format":"email"},)"
          R"("website":{"type":"string","format":"uri"},)"
          R"("birthday":{"type":"string","format":"date"},)"
          R"("meeting":{"type":"string","format":"date-time"},)"
          R"("age":{"type":"integer","title":"Age","minimum":0,"maximum":150},)"
          R"("height":{"type":"number","minimum":0.5,"maximum":2.5},)"
          R"("subscribe":{"type":"boolean","title":"Subscribe","description":"Send me news"}},)"
          R"("required":["username","email","website","birthday","meeting","age","height","subscribe"]})");
  }

  TEST_CASE("integer bounds are JSON integers and number bounds are JSON doubles") {
    // A client building an integer field from `"minimum": 0.0` may offer fractions.
    const boost::json::object s = droid::elicitation_schema<profile>();
    const auto& props = s.at("properties").as_object();
    CHECK(props.at("age").at("minimum").is_int64());
    CHECK(props.at("age").at("maximum").is_int64());
    CHECK(props.at("height").at("minimum").is_double());
    CHECK(props.at("username").at("minLength").is_int64());
  }

  TEST_CASE("enums without titles are untitled selects, with titles oneOf and items.anyOf (SEP-1330)") {
    // The two forms must not be mixed: the suite fails a titled select that also has
    // `enum`, and an untitled one that has `oneOf`.
    CHECK(schema_text<selections>() ==
          R"({"type":"object","properties":{)"
          R"("one_topic":{"type":"string","enum":["news","sport","weather"]},)"
          R"("one_size":{"type":"string","title":"Size","oneOf":[{"const":"s","title":"Small"},)"
          R"({"const":"m","title":"Medium"},{"const":"l","title":"Large"}]},)"
          R"("one_legacy":{"type":"string","enum":["opt1","opt2","opt3"],)"
          R"("enumNames":["Option One","Option Two","Option Three"]},)"
          R"("topics":{"type":"array","description":"Pick some","minItems":1,"maxItems":2,)"
          R"("items":{"type":"string","enum":["news","sport","weather"]}},)"
          R"("sizes":{"type":"array","minItems":0,"maxItems":3,"items":{"anyOf":[{"const":"s","title":"Small"},)"
          R"({"const":"m","title":"Medium"},{"const":"l","title":"Large"}]}},)"
          // A multi select has no legacy form: titles go to items.anyOf.
          R"("legacies":{"type":"array","items":{"anyOf":[{"const":"opt1","title":"Option One"},)"
          R"({"const":"opt2","title":"Option Two"},{"const":"opt3","title":"Option Three"}]}}},)"
          R"("required":["one_topic","one_size","one_legacy","topics","sizes","legacies"]})");
  }

  TEST_CASE("every kind states its default, and a defaulted member is not required (SEP-1034)") {
    // A client prefills the form from `default`; it must be the value the decoder keeps
    // when the member is left out, which is the member's value in a fresh struct.
    CHECK(schema_text<preferences>() ==
          R"({"type":"object","properties":{)"
          R"("nickname":{"type":"string","default":"Ann"},)"
          R"("seats":{"type":"integer","default":2},)"
          R"("ratio":{"type":"number","default":0.25},)"
          R"("dark":{"type":"boolean","default":true},)"
          R"("feed":{"type":"string","enum":["news","sport","weather"],"default":"weather"},)"
          R"("fit":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"m","title":"Medium"},)"
          R"({"const":"l","title":"Large"}],"default":"m"},)"
          R"("topics":{"type":"array","items":{"type":"string","enum":["news","sport","weather"]},)"
          R"("default":["news","sport"]},)"
          R"("extra":{"type":"array","items":{"anyOf":[{"const":"s","title":"Small"},{"const":"m","title":"Medium"},)"
          R"({"const":"l","title":"Large"}]},"default":["l"]},)"
          R"("motto":{"type":"string","default":"carpe diem"},)"
          // An empty optional has no default: `null` is not a string.
          R"("lucky":{"type":"integer"}}})");
  }

  TEST_CASE("optional and defaulted members are left out of required, everything else is in it") {
    const boost::json::object s = droid::elicitation_schema<ticket>();
    CHECK(s.at("required") == boost::json::array{"title", "watchers"});
    // An optional wraps the same property as its value type.
    CHECK(s.at("properties").at("area") == boost::json::parse(R"({"type":"string","enum":["news","sport","weather"]})"));
    CHECK(s.at("properties").at("tags").at("maxItems") == 2);
    // A form with nothing required says nothing about it, as schema_of does.
    CHECK_FALSE(droid::elicitation_schema<preferences>().contains("required"));
  }

  TEST_CASE("the conformance defaults form has the types and defaults the suite checks") {
    // elicitation-sep1034-defaults: name "John Doe", age 30 (integer), score 95.5,
    // status "active" within its enum, verified true.
    CHECK(schema_text<sep1034_form>() ==
          R"({"type":"object","properties":{)"
          R"("name":{"type":"string","description":"User name","default":"John Doe"},)"
          R"("age":{"type":"integer","description":"User age","default":30},)"
          R"("score":{"type":"number","description":"User score","default":95.5},)"
          R"("status":{"type":"string","description":"User status","enum":["active","inactive","pending"],)"
          R"("default":"active"},)"
          R"("verified":{"type":"boolean","description":"Verification status","default":true}}})");
    CHECK(droid::elicitation_schema<sep1034_form>().at("properties").at("age").at("default").is_int64());
  }

  TEST_CASE("the conformance enum form has the five shapes the suite checks") {
    // elicitation-sep1330-enums: untitled enum without oneOf, titled oneOf without enum,
    // legacy enum with enumNames of equal length, and the two multi selects.
    CHECK(schema_text<sep1330_form>() ==
          R"({"type":"object","properties":{)"
          R"("untitledSingle":{"type":"string","description":"Select one option",)"
          R"("enum":["option1","option2","option3"]},)"
          R"("titledSingle":{"type":"string","description":"Select one option with titles",)"
          R"("oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},)"
          R"({"const":"value3","title":"Third Option"}]},)"
          R"j("legacyEnum":{"type":"string","description":"Select one option (legacy)",)j"
          R"("enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},)"
          R"("untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,)"
          R"("items":{"type":"string","enum":["option1","option2","option3"]}},)"
          R"("titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,)"
          R"("maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},)"
          R"({"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}})");
  }

  TEST_CASE("a hint that a member cannot carry is refused with a sentence naming it") {
    // Dropping the keyword instead would ship a form that accepts what its author meant
    // to refuse; the schema is built when the tool is written, the time to say so.
    CHECK(refusal<misuse<1>>() == R"(droid: elicit_hints names "txt", which is not a described member)");
    CHECK(refusal<misuse<2>>() == R"(droid: elicit_hints names "text" twice)");
    CHECK(refusal<misuse<3>>() ==
          R"(droid: elicit_hints gives "text" the format "phone"; forms allow only email, uri, date and date-time)");
    CHECK(refusal<misuse<4>>() == R"(droid: elicit_hints gives "count" a format, which only string members can have)");
    CHECK(refusal<misuse<5>>() ==
          R"(droid: elicit_hints gives "count" minLength or maxLength, which only string members can have)");
    CHECK(refusal<misuse<6>>() ==
          R"(droid: elicit_hints gives "text" minimum or maximum, which only integer and number members can have)");
    CHECK(refusal<misuse<7>>() == R"(droid: elicit_hints gives "text" minItems or maxItems, which only multi-select )"
                                  R"(members (std::vector of an enum) can have)");
    CHECK(refusal<misuse<8>>() == R"(droid: elicit_hints gives "count" a minimum above its maximum)");
    CHECK(refusal<misuse<9>>() == R"(droid: elicit_hints gives "text" a minLength above its maxLength)");
    CHECK(refusal<misuse<10>>() == R"(droid: elicit_hints gives "tags" a minItems above its maxItems)");
    CHECK(refusal<misuse<11>>() ==
          R"(droid: elicit_hints gives "count" the bound 0.5, which is not a whole number its integer type can hold)");
    CHECK(refusal<misuse<12>>() ==
          R"(droid: elicit_hints gives "small" the bound 300, which is not a whole number its integer type can hold)");
    CHECK(refusal<misuse<13>>() == R"(droid: elicit_hints gives "ratio" a bound that is not a finite number)");
    CHECK(refusal<misuse<14>>() ==
          "droid: the default of \"count\" breaks its own elicit_hints (`count`: 0 is below the minimum 1)");
    // Sanity: the same struct with sound hints is accepted.
    CHECK(refusal<misuse<15>>().empty());
  }

  TEST_CASE("a titled enum must title each enumerator exactly once, and nothing else") {
    // Falling back to the C++ name would show an enumerator added later as `opt_x`
    // with nothing to flag it.
    CHECK(refusal<titled_misuse>() == R"(droid: enum_titles gives no title for "b" (member "missing"))");
    CHECK_THROWS_WITH_AS((void)droid::detail::enum_title_list<double_title>("doubled"),
                         R"(droid: enum_titles gives "a" two titles (member "doubled"))", std::invalid_argument);
    CHECK_THROWS_WITH_AS((void)droid::detail::enum_title_list<stray_title>("stray"),
                         R"(droid: enum_titles titles a value that is not a described enumerator (member "stray"))",
                         std::invalid_argument);
  }

  TEST_CASE("an accepted content decodes back with droid::decode, vectors of enums included") {
    // The suite's replies, verbatim. droid::decode reads every value a form holds; the
    // elicitation-specific rules are decode_elicited's (next cases).
    sep1034_form d{};
    std::string error;
    REQUIRE(decode_text(R"({"name":"Jane Smith","age":25,"score":88,"status":"inactive","verified":false})", d,
                        error, true));
    CHECK(d.name == "Jane Smith");
    CHECK(d.age == 25);
    CHECK(d.score == 88.0);
    CHECK(d.status == user_status::inactive);
    CHECK_FALSE(d.verified);

    sep1330_form e{};
    REQUIRE(decode_text(R"({"untitledSingle":"option1","titledSingle":"value1","legacyEnum":"opt1",)"
                        R"("untitledMulti":["option1","option2"],"titledMulti":["value1","value2"]})",
                        e, error, true));
    CHECK(e.untitledSingle == untitled_option::option1);
    CHECK(e.titledSingle == titled_value::value1);
    CHECK(e.legacyEnum == legacy_option::opt1);
    CHECK(e.untitledMulti == std::vector<untitled_option>{untitled_option::option1, untitled_option::option2});
    CHECK(e.titledMulti == std::vector<titled_choice>{titled_choice::value1, titled_choice::value2});

    sep1330_form f{};
    CHECK_FALSE(decode_text(R"({"titledMulti":["value1","First Choice"]})", f, error, true));
    CHECK(error == "`titledMulti[1]`: \"First Choice\" is not one of value1, value2, value3");
  }

  TEST_CASE("decode_elicited keeps defaults for members the user left out, which droid::decode calls required") {
    // droid::decode reads `defaulted` from field_hints<T>, not elicit_hints<T>: a user
    // clearing a prefilled field would otherwise fail the whole form.
    sep1034_form plain{};
    std::string error;
    CHECK_FALSE(decode_text(R"({"age":41})", plain, error, true));
    CHECK(error == "`name` is required");

    sep1034_form d{};
    REQUIRE(decode_text(R"({"age":41})", d, error));
    CHECK(d.name == "John Doe");
    CHECK(d.age == 41);
    CHECK(d.status == user_status::active);

    ticket t{};
    CHECK_FALSE(decode_text(R"({"title":"abc"})", t, error));
    CHECK(error == "`watchers` is required");
  }

  TEST_CASE("decode_elicited refuses what the hints rule out, naming the member") {
    // A client need not validate against the schema, so the server does.
    struct expectation {
      const char* json;
      const char* says;
    };
    for (const expectation& e : {
             expectation{R"({"title":"ab","watchers":[]})", "`title`: 2 characters, at least 3 required"},
             // Lengths count code points, as JSON Schema does: "Åå" is 4 bytes.
             expectation{R"({"title":"Åå","watchers":[]})", "`title`: 2 characters, at least 3 required"},
             expectation{R"({"title":"a","watchers":[]})", "`title`: 1 character, at least 3 required"},
             expectation{R"({"title":"abcdefghijklmnopqrstu","watchers":[]})",
                         "`title`: 21 characters, at most 20 allowed"},
             expectation{R"({"title":"abc","priority":0,"watchers":[]})", "`priority`: 0 is below the minimum 1"},
             expectation{R"({"title":"abc","priority":6,"watchers":[]})", "`priority`: 6 is above the maximum 5"},
             expectation{R"({"title":"abc","tags":["news","sport","weather"],"watchers":[]})",
                         "`tags`: 3 selected, at most 2 allowed"},
             expectation{R"({"title":"abc","watchers":["rain"]})",
                         "`watchers[0]`: \"rain\" is not one of news, sport, weather"},
             expectation{R"({"title":"abc","priority":"2","watchers":[]})",
                         "`priority`: expected an integer, got a string"},
             expectation{R"([])", "`content`: expected an object, got an array"},
         }) {
      CAPTURE(e.json);
      ticket t{};
      std::string error;
      CHECK_FALSE(decode_text(e.json, t, error));
      CHECK(error == e.says);
    }
    ticket t{};
    std::string error;
    REQUIRE(decode_text(R"({"title":"Åsa","note":null,"priority":5,"tags":["news"],"watchers":["sport"]})", t, error));
    CHECK(t.title == "Åsa");
    CHECK_FALSE(t.note);
    CHECK(t.priority == 5);
    CHECK(t.tags == std::vector<topic>{topic::news});
  }

  TEST_CASE("decode_elicited reads the JSON value an exchange answers with") {
    // tool_context::exchange hands back a boost::json::value, not a parsed tape.
    const boost::json::value answer = boost::json::parse(
        R"({"action":"accept","content":{"nickname":"Bo","topics":["weather"],"extra":[],"lucky":7}})");
    preferences p{};
    std::string error;
    REQUIRE(droid::decode_elicited(answer.at("content"), p, error));
    CHECK(p.nickname == "Bo");
    CHECK(p.seats == 2);
    CHECK(p.topics == std::vector<topic>{topic::weather});
    CHECK(p.extra.empty());
    CHECK(p.motto == "carpe diem");
    CHECK(p.lucky == 7);
  }
}
