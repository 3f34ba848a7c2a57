package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRelayed: warnings reach kubectl as the API server relays them — each once, none
// empty or with a control character — and once their text passes 4 KiB, each cut to 256
// runes, the later ones dropped when the cut ones fill 4 KiB again.
func TestRelayed(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, 1000) }
	cutTo := func(s string) string { return string([]rune(s)[:relayItemRunes]) }
	for _, c := range []struct {
		name     string
		in, want []string
	}{
		{"as they are", []string{"a", "b"}, []string{"a", "b"}},
		{"repeated and empty", []string{"a", "", "b", "a"}, []string{"a", "b"}},
		{"a control character", []string{"a\nb", "c"}, []string{"c"}},
		{"4 KiB whole", []string{long("a"), long("b"), long("c"), long("d")}, []string{long("a"), long("b"), long("c"), long("d")}},
		{"past 4 KiB", []string{long("a"), long("b"), long("c"), long("d"), long("é")},
			[]string{cutTo(long("a")), cutTo(long("b")), cutTo(long("c")), cutTo(long("d")), cutTo(long("é"))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := texts(relayed(advice(c.in))); !slices.Equal(got, c.want) {
				t.Errorf("got %d warnings %.80q…, want %d", len(got), got, len(c.want))
			}
		})
	}
	// Past 4 KiB, cut warnings are relayed until they fill 4 KiB again.
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("%03d%s", i, long("x")))
	}
	got := texts(relayed(advice(many)))
	if len(got) != relayTotalRunes/relayItemRunes || got[0] != cutTo(many[0]) {
		t.Errorf("20 long warnings: got %d, want the first %d cut", len(got), relayTotalRunes/relayItemRunes)
	}
}

// TestHeaderText: a warning is answered as a Warning header can carry it, each control
// character and each byte that is not UTF-8 escaped, so the API server relays it rather
// than dropping it, and a text a header can carry is answered as it is.
func TestHeaderText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`spec.rules[0].when: "a\b" é ✓`, `spec.rules[0].when: "a\b" é ✓`},
		{"line one\nline two", `line one\nline two`},
		{"tab\tcarriage\rbell\a", `tab\tcarriage\rbell\a`},
		{"escape \x1b[31mred\x1b[0m", `escape \x1b[31mred\x1b[0m`},
		{"delete \x7f, next line \u0085", `delete \x7f, next line \u0085`},
		{"not UTF-8 \xff\xfe", `not UTF-8 \xff\xfe`},
		{"replacement character \uFFFD kept", "replacement character \uFFFD kept"},
	} {
		got := HeaderText(c.in)
		if got != c.want || !headerSafe(got) {
			t.Errorf("HeaderText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var w warnings
	w.add(LoadAdvice, "OAR-SEL-6", "spec.rules[0].selector.tool", "a rule's text\nover two lines")
	w.add(LoadAdvice, "", "", "another")
	want := []string{`[OAR-SEL-6] spec.rules[0].selector.tool: a rule's text\nover two lines`, "another"}
	if got := texts(relayed(w.list())); !slices.Equal(got, want) {
		t.Errorf("relayed %q, want %q", got, want)
	}
	if got := []string(w.response()); !slices.Equal(got, want) {
		t.Errorf("answered %q, want %q", got, want)
	}
}

// TestJudgeListsEveryCause: the refusal lists maxCauses causes and counts the rest, as
// the webhook does; Causes holds every one, the listed ones first.
func TestJudgeListsEveryCause(t *testing.T) {
	rules := make([]map[string]any, maxCauses+3)
	for i := range rules {
		rules[i] = with(rule("acme.many", fmt.Sprintf("R%02d", i)), "when", "pth == 1")
	}
	verdicts, err := Judge(context.Background(), []client.Object{
		capabilityObject("ns", "gateway", gatewaySpec()), rulePack(t, "ns", "many", "gateway", 0, rules),
	})
	if err != nil {
		t.Fatal(err)
	}
	v := verdicts[1]
	if v.Refusal == nil || v.Webhook != "vrulepack.rules.oar.dev" {
		t.Fatalf("not refused by the RulePack webhook: %+v", v)
	}
	listed := v.Refusal.Status().Details.Causes
	if len(listed) != maxCauses+1 || len(v.Causes) != maxCauses+3 || !strings.Contains(listed[maxCauses].Message, "3 more problems") {
		t.Fatalf("%d causes listed, %d in all", len(listed), len(v.Causes))
	}
	for i, c := range listed[:maxCauses] {
		if c.Field != v.Causes[i].Field || c.Message != v.Causes[i].ErrorBody() {
			t.Errorf("cause %d: listed %+v, Causes %v", i, c, v.Causes[i])
		}
	}
	if want := `admission webhook "vrulepack.rules.oar.dev" denied the request: RulePack.rules.oar.dev "many" is invalid: [`; !strings.HasPrefix(v.Refusal.Error(), want) {
		t.Errorf("message %q, want it to start with %q", v.Refusal.Error(), want)
	}
}

// TestJudgeSet: the objects are judged as created one by one into the others — the
// Capability sees both packs, each pack the other — and are not modified.
func TestJudgeSet(t *testing.T) {
	objects := []client.Object{
		capabilityObject("ns", "gateway", gatewaySpec()),
		rulePack(t, "ns", "a", "gateway", 0, []map[string]any{rule("acme.security", "READ")}),
		rulePack(t, "ns", "b", "gateway", 0, []map[string]any{rule("acme.security", "READ")}),
		rulePack(t, "other", "c", "gateway", 0, []map[string]any{rule("acme.security", "READ")}),
	}
	verdicts, err := Judge(context.Background(), objects)
	if err != nil {
		t.Fatal(err)
	}
	if len(verdicts[0].Warnings) > 0 || verdicts[0].Refusal != nil {
		t.Errorf("Capability: %+v", verdicts[0])
	}
	hasWarning(t, texts(verdicts[1].Warnings), "[OAR-DOC-9]", `RulePack "b"`)
	hasWarning(t, texts(verdicts[2].Warnings), "[OAR-DOC-9]", `RulePack "a"`)
	hasWarning(t, texts(verdicts[3].Warnings), `Capability "gateway" does not exist`)
	for _, o := range objects {
		if o.GetGeneration() != 0 {
			t.Errorf("%s was modified", o.GetName())
		}
	}
}

// TestJudgeRefusesAnInvalidSet: a set holds each object once, and only the kinds the
// webhook judges.
func TestJudgeRefusesAnInvalidSet(t *testing.T) {
	ctx := context.Background()
	c := capabilityObject("ns", "gateway", gatewaySpec())
	if _, err := Judge(ctx, []client.Object{c, c.DeepCopy()}); err == nil || !strings.Contains(err.Error(), "ns/gateway is given twice") {
		t.Errorf("the same Capability twice: %v", err)
	}
	if _, err := Judge(ctx, []client.Object{c, rulePack(t, "ns", "gateway", "gateway", 0, nil)}); err != nil {
		t.Errorf("a pack named as its Capability: %v", err)
	}
	if _, err := Judge(ctx, []client.Object{&corev1.ConfigMap{}}); err == nil {
		t.Error("a ConfigMap was judged")
	}
}

// advice is each text as a warning of kind LoadAdvice.
func advice(texts []string) []Warning {
	out := make([]Warning, len(texts))
	for i, s := range texts {
		out[i] = Warning{Text: s, Kind: LoadAdvice}
	}
	return out
}

// texts is the text of each warning.
func texts(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return out
}
