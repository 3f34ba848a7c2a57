package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// Grammars of section 2 and section 7.1.
var (
	idPattern        = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)                                                 // [OAR-DOC-6]
	namespacePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`) // [OAR-DOC-7]
	extensionPattern = regexp.MustCompile(`^x-[a-z0-9]+(-[a-z0-9]+)*$`)                                        // [OAR-DOC-26]
	detectorPattern  = regexp.MustCompile(`^detector://[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)                        // [OAR-OPS-12]
	versionPattern   = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)                                // [OAR-DOC-3]
	namePattern      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)                                          // Appendix A name
)

// isID reports whether s matches idPattern; the loader asks for every rule and every
// reference, so it does not run the pattern.
func isID(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isNamespace reports whether s matches namespacePattern, as isID does idPattern: labels
// of a-z, 0-9 and inner hyphens, joined by dots.
func isNamespace(s string) bool {
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Supported format version: this engine implements OAR 1.0.
const (
	supportedMajor = 1
	supportedMinor = 0
)

// supportedVersion is the version string of every current document, checked first.
var supportedVersion = strconv.Itoa(supportedMajor) + "." + strconv.Itoa(supportedMinor)

// jsonText renders a decoded value as compact JSON text for Error.Value.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return diag.Truncate(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return diag.Truncate(fmt.Sprint(v))
	}
	return diag.Truncate(string(b))
}

// fieldErr builds a diagnostic for the member at field carrying value v.
func fieldErr(clause, field string, v any, format string, args ...any) *diag.Error {
	e := diag.New(clause, field, format, args...)
	if v != nil {
		e.Value = jsonText(v)
	}
	return e
}

// yamlHint explains a value YAML turned into a non-string where a string belongs.
func yamlHint(v any) string {
	switch x := v.(type) {
	case bool:
		return fmt.Sprintf("; got boolean %t — YAML reads unquoted yes/no/on/off/true/false as booleans, so quote the value", x)
	case json.Number:
		return fmt.Sprintf("; got a number — YAML reads unquoted %s as a number, so quote the value", x)
	case nil:
		return "; got null"
	}
	return "; got " + types.DescribeJSON(v)
}

// checkVersion applies the version gate of [OAR-DOC-3], [OAR-DOC-4] and [OAR-DOC-5] to
// the member field (oar, oar_config or oar_capability_version). It reports at most one
// diagnostic and returns false when the document must not be processed further.
func checkVersion(l *diag.List, obj map[string]any, field string) bool {
	raw, ok := obj[field]
	if !ok {
		l.Add(fieldErr("OAR-DOC-2", field, nil, "missing required member %q", field))
		return false
	}
	s, ok := raw.(string)
	if !ok {
		hint := ""
		if n, isNum := raw.(json.Number); isNum {
			hint = fmt.Sprintf(" — an unquoted %s: %s in YAML is read as a number, write %s: \"%s\"", field, n, field, n)
			if !strings.Contains(string(n), ".") {
				hint = fmt.Sprintf(" — an unquoted number in YAML is read as a number, quote the version, for example %s: \"1.0\"", field)
			}
			l.Add(diag.New("OAR-DOC-3", field, "%s must be a string of the form <major>.<minor>%s", field, hint))
			return false
		}
		l.Add(fieldErr("OAR-DOC-3", field, raw, "%s must be a string of the form <major>.<minor>%s", field, yamlHint(raw)))
		return false
	}
	if s == supportedVersion {
		return true
	}
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		l.Add(fieldErr("OAR-DOC-3", field, s, "%s %q is not a version: it must be <major>.<minor>, decimal integers with no leading zero", field, s))
		return false
	}
	major, errMajor := strconv.Atoi(m[1])
	minor, errMinor := strconv.Atoi(m[2])
	if errMajor != nil || major != supportedMajor {
		l.Add(fieldErr("OAR-DOC-4", field, s, "%s %q: major version %s is not supported; this engine implements %d.%d", field, s, m[1], supportedMajor, supportedMinor))
		return false
	}
	if errMinor != nil || minor > supportedMinor {
		l.Add(fieldErr("OAR-DOC-5", field, s, "%s %q: minor version %s is greater than %d, the highest this engine implements for major %d", field, s, m[2], supportedMinor, supportedMajor))
		return false
	}
	return true
}

// sortedKeys returns the members of obj in a stable order so diagnostics are stable.
func sortedKeys(obj map[string]any) []string {
	return appendSortedKeys(make([]string, 0, len(obj)), obj)
}

// appendSortedKeys appends obj's keys, sorted, to keys, which is empty.
func appendSortedKeys(keys []string, obj map[string]any) []string {
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// getString reads an optional string member; a present non-string is reported under clause.
func getString(l *diag.List, obj map[string]any, field, path, clause string) (string, bool) {
	raw, ok := obj[field]
	if !ok {
		return "", false
	}
	s, isStr := raw.(string)
	if !isStr {
		l.Add(fieldErr(clause, path, raw, "%s must be a string%s", field, yamlHint(raw)))
		return "", false
	}
	return s, true
}

// getRequiredString reads a string member that must be present; what names the object
// that must carry it.
func getRequiredString(l *diag.List, obj map[string]any, field, path, clause, what string) (string, bool) {
	if _, present := obj[field]; !present {
		l.Add(fieldErr(clause, path, nil, "%s must carry %s", what, field))
		return "", false
	}
	return getString(l, obj, field, path, clause)
}

// item is one object of a list member, with its path.
type item struct {
	path string
	obj  map[string]any
}

// getObjectList reads an optional list whose members must be closed objects with the
// given members, reporting a non-list, a non-object member and unknown members.
func getObjectList(l *diag.List, obj map[string]any, field, clause, what string, members ...string) []item {
	raw, ok := obj[field]
	if !ok {
		return nil
	}
	arr, isArr := raw.([]any)
	if !isArr {
		l.Add(fieldErr(clause, field, raw, "%s must be a list of objects; got %s", field, types.DescribeJSON(raw)))
		return nil
	}
	allowed := setOf(members...)
	out := make([]item, 0, len(arr))
	for i, m := range arr {
		path := fmt.Sprintf("%s[%d]", field, i)
		entry, isObj := m.(map[string]any)
		if !isObj {
			l.Add(fieldErr(clause, path, m, "%s must be an object with %s; got %s", what, strings.Join(members, " and "), types.DescribeJSON(m)))
			continue
		}
		checkClosed(l, entry, allowed, path, clause, what, false)
		out = append(out, item{path: path, obj: entry})
	}
	return out
}

// getStringList reads an optional list of strings.
func getStringList(l *diag.List, obj map[string]any, field, path, clause string) ([]string, bool) {
	arr, present, good := checkStringList(l, obj, field, path, clause)
	if !present {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, m := range arr {
		if s, isStr := m.(string); isStr {
			out = append(out, s)
		}
	}
	return out, good
}

// checkStringList is getStringList for a caller that only reads the list: it returns
// the list as decoded, whether it is present, and whether every member is a string.
func checkStringList(l *diag.List, obj map[string]any, field, path, clause string) (arr []any, present, good bool) {
	raw, ok := obj[field]
	if !ok {
		return nil, false, false
	}
	arr, isArr := raw.([]any)
	if !isArr {
		l.Add(fieldErr(clause, path, raw, "%s must be a list of strings%s", field, yamlHint(raw)))
		return nil, false, false
	}
	good = true
	for i, m := range arr {
		if _, isStr := m.(string); !isStr {
			l.Add(fieldErr(clause, fmt.Sprintf("%s[%d]", path, i), m, "%s[%d] must be a string%s", field, i, yamlHint(m)))
			good = false
		}
	}
	return arr, true, good
}

// getBool reads an optional boolean member.
func getBool(l *diag.List, obj map[string]any, field, path, clause string) (bool, bool) {
	raw, ok := obj[field]
	if !ok {
		return false, false
	}
	b, isBool := raw.(bool)
	if !isBool {
		l.Add(fieldErr(clause, path, raw, "%s must be a boolean; got %s", field, types.DescribeJSON(raw)))
		return false, false
	}
	return b, true
}

// getObject reads an optional object member.
func getObject(l *diag.List, obj map[string]any, field, path, clause string) (map[string]any, bool) {
	raw, ok := obj[field]
	if !ok {
		return nil, false
	}
	m, isObj := raw.(map[string]any)
	if !isObj {
		l.Add(fieldErr(clause, path, raw, "%s must be an object; got %s", field, types.DescribeJSON(raw)))
		return nil, false
	}
	return m, true
}

// checkClosed reports every member of obj outside allowed; x- extensions pass when
// allowExtensions is set ([OAR-DOC-26], [OAR-DOC-27]).
func checkClosed(l *diag.List, obj map[string]any, allowed map[string]bool, path, clause, what string, allowExtensions bool) {
	if onlyAllowed(obj, allowed) {
		return
	}
	for _, k := range sortedKeys(obj) {
		if allowed[k] {
			continue
		}
		if allowExtensions && extensionPattern.MatchString(k) {
			continue
		}
		l.Add(fieldErr(clause, diag.JoinPath(path, k), nil, "unknown member %q in %s", k, what)).Suggest(k, keys(allowed))
	}
}

// onlyAllowed reports whether every member of obj is allowed: most objects have no
// other, and only one that has needs its keys sorted for the order of diagnostics.
func onlyAllowed(obj map[string]any, allowed map[string]bool) bool {
	for k := range obj {
		if !allowed[k] {
			return false
		}
	}
	return true
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// validRuleRef reports whether s is a bare id or a qualified <namespace>/<id>.
func validRuleRef(s string) bool {
	if ns, id, ok := strings.Cut(s, "/"); ok {
		return isNamespace(ns) && isID(id)
	}
	return isID(s)
}

// validIdentifier reports whether s is an Appendix A identifier, name { "." name }.
func validIdentifier(s string) bool {
	for _, part := range strings.Split(s, ".") {
		if !namePattern.MatchString(part) {
			return false
		}
	}
	return true
}
