package engine

import "github.com/oar-operator/oar-operator/internal/engine/types"

// The vocabulary of sections 5.3, 5.4 and 8.1, restated in docs/spec/vocabulary.md.
// An engine provides exactly these names with exactly these types ([OAR-FACT-15],
// [OAR-FACT-16], [OAR-FACT-17]).

// CoreAnchors are the eight lifecycle moments of section 8.1 ([OAR-PROF-1]).
var CoreAnchors = []string{
	"tool.pre_invoke",
	"tool.handler",
	"tool.post_invoke",
	"agent.post_turn",
	"agent.finalize",
	"model.input",
	"model.output",
	"model.tool_result",
}

// AnchorToolPreInvoke is the anchor whose unblocked occurrences append activity steps
// ([OAR-PROF-9]).
const AnchorToolPreInvoke = "tool.pre_invoke"

func isCoreAnchor(s string) bool {
	for _, a := range CoreAnchors {
		if a == s {
			return true
		}
	}
	return false
}

// vocabEntry is one declared name: a fact, or a function when fn is set.
type vocabEntry struct {
	name string
	kind types.Kind
	fn   bool
	arg  types.Kind
}

func fact(name string, k types.Kind) vocabEntry { return vocabEntry{name: name, kind: k} }
func fn(name string, arg, res types.Kind) vocabEntry {
	return vocabEntry{name: name, kind: res, fn: true, arg: arg}
}

// Core fact names with engine-computed values.
const (
	factAnchor         = "anchor"
	factFireCount      = "fire_count"
	factBreakerCount   = "breaker_count"
	funcFireCountOf    = "fire_count_of"
	funcBreakerCountOf = "breaker_count_of"
)

// coreVocabulary is section 5.3.
var coreVocabulary = []vocabEntry{
	fact(factAnchor, types.String),
	fact(factFireCount, types.Int),
	fact(factBreakerCount, types.Int),
	fn(funcFireCountOf, types.String, types.Int),
	fn(funcBreakerCountOf, types.String, types.Int),
}

// Tool-profile names the tool-observation adapter supplies ([OAR-CONF-40]).
const (
	factTool            = "tool"
	factToolArgs        = "tool_args"
	factToolFingerprint = "tool_args_fingerprint"
	funcToolArgString   = "tool_arg_string"
	funcToolArgInt      = "tool_arg_int"
	funcToolArgBool     = "tool_arg_bool"
)

// profileVocabulary is section 5.4, profile by profile.
var profileVocabulary = map[string][]vocabEntry{
	"tool": {
		fact(factTool, types.String),
		fact(factToolArgs, types.Map),
		fact(factToolFingerprint, types.String),
		fact("arg_validation_errors", types.ListString),
		fact("arg_validation_reason", types.String),
		fact("arg_validation_field", types.String),
		fact("permission_profile", types.String),
		fact("policy_denied", types.Bool),
		fn(funcToolArgString, types.String, types.String),
		fn(funcToolArgInt, types.String, types.Int),
		fn(funcToolArgBool, types.String, types.Bool),
	},
	"session": {
		fact("session_posture", types.String),
		fact("principal", types.String),
		fact("principal_roles", types.ListString),
	},
	"filesystem": {
		fact("is_directory", types.Bool),
		fact("not_found", types.Bool),
		fact("path_denied", types.Bool),
		fn("path_outside_scope", types.String, types.Bool),
	},
	"content-provenance": {
		fact("content_roles", types.ListString),
		fact("content_origins", types.ListString),
		fact("content_authorities", types.ListString),
		fact("content_trust_tiers", types.ListString),
		fact("content_sources", types.ListString),
		fact("content_segment_count", types.Int),
		fact("content_contains_untrusted", types.Bool),
	},
	"content": {
		fact("content_length", types.Int),
	},
	"secrets": {
		fact("secret_matches", types.ListMap),
	},
	"pii": {
		fact("pii_entities", types.ListMap),
	},
	"prompt-injection": {
		fact("prompt_injection_score", types.Double),
	},
	"jailbreak": {
		fact("jailbreak_score", types.Double),
	},
	"moderation": {
		fact("moderation_categories", types.ListString),
		fn("moderation_score", types.String, types.Double),
	},
	"mcp": {
		fact("mcp_provider_id", types.String),
		fact("mcp_tool_name", types.String),
		fact("mcp_qualified_tool", types.String),
		fact("mcp_provider_configured", types.Bool),
		fact("mcp_provider_enabled", types.Bool),
		fact("mcp_call_ok", types.Bool),
		fact("mcp_error_code", types.String),
		fact("mcp_schema_matched", types.Bool),
		fn("mcp_provider_configured_for", types.String, types.Bool),
		fn("mcp_provider_enabled_for", types.String, types.Bool),
		fn("mcp_has_field", types.String, types.Bool),
		fn("mcp_field_bool", types.String, types.Bool),
		fn("mcp_field_string", types.String, types.String),
		fn("mcp_field_int", types.String, types.Int),
	},
}

// ProfileNames lists the standard profiles in the order of section 5.4.
var ProfileNames = []string{
	"tool", "session", "filesystem", "content-provenance", "content",
	"secrets", "pii", "prompt-injection", "jailbreak", "moderation", "mcp",
}

// detectorProfiles are produced by registered detectors and may be claimed only with
// a non-empty detectors list ([OAR-OPS-22]).
var detectorProfiles = map[string]bool{
	"secrets": true, "pii": true, "prompt-injection": true, "jailbreak": true, "moderation": true,
}

// reservedWords may not name a fact or function ([OAR-EXPR-24]).
var reservedWords = map[string]bool{"true": true, "false": true, "in": true}
