package bundle

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// sample is a small sealed bundle.
func sample(t testing.TB) *Bundle {
	t.Helper()
	b := &Bundle{
		Capability: capability(t),
		Packs: []Pack{
			{Name: "alpha", Generation: 2, Rules: []any{rule(t, "alpha.sec", "READ", `"requires":{"profiles":["tool"]}`, `"when":"size(tool_args) > 1"`, `"references":{"cvss":7.50}`)}},
			{Name: "beta", Generation: 1, Rules: []any{rule(t, "beta.sec", "WRITE", `"copy":{"what":"<b>&</b>"}`)}},
		},
		Configs: []Config{{Name: "ops", Generation: 1, Order: 10,
			Document: config(t, `{"oar_config":"1.0","enforcement":{"alpha.sec/READ":"monitor"}}`)}},
	}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	return b
}

func gz(t testing.TB, p []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDigestIsCanonical(t *testing.T) {
	b := sample(t)
	canon, err := canonical(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"<b>&</b>"`, `"cvss":7.50`, `"digest":""}`} {
		if !bytes.Contains(canon, []byte(want)) {
			t.Errorf("canonical JSON lacks %s (no HTML escaping, numbers as written, digest cleared):\n%s", want, canon)
		}
	}
	if bytes.HasSuffix(canon, []byte("\n")) {
		t.Error("canonical JSON ends with a newline")
	}
	if !strings.HasPrefix(b.Digest, "sha256:") || len(b.Digest) != len("sha256:")+64 {
		t.Errorf("digest %q is not sha256:<hex>", b.Digest)
	}
	again := sample(t)
	again.Digest = "sha256:whatever"
	if d, _ := again.ComputeDigest(); d != b.Digest {
		t.Errorf("ComputeDigest depends on the digest member: %s != %s", d, b.Digest)
	}
}

// The assembler joins pre-encoded parts; the result must be what encoding the Bundle gives.
func TestAssembledJSONIsTheEncodingOfTheBundle(t *testing.T) {
	in := conflicted(t)
	res := mustAssemble(t, in)
	enc, err := Encode(res.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	if enc.Digest != res.Encoded.Digest || enc.Data[KeyPlain] != res.Encoded.Data[KeyPlain] {
		t.Fatalf("Encode gives\n%s\nAssemble gave\n%s", enc.Data[KeyPlain], res.Encoded.Data[KeyPlain])
	}
	full, err := marshal(res.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	if string(full) != enc.Data[KeyPlain] {
		t.Fatalf("the stored JSON is not the encoding of the sealed bundle:\n%s\n%s", full, enc.Data[KeyPlain])
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	b := sample(t)
	enc, err := Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	if enc.Compressed || enc.Digest != b.Digest || enc.Size != len(enc.Data[KeyPlain]) || len(enc.BinaryData) != 0 {
		t.Fatalf("small bundle encoded as %+v", enc)
	}
	got, err := Decode(enc.Data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != b.Digest || got.Packs[0].Rules[0].(map[string]any)["references"].(map[string]any)["cvss"] != json.Number("7.50") {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := Load(got); err != nil {
		t.Fatal(err)
	}
	// The same bundle compressed decodes the same.
	got, err = Decode(nil, map[string][]byte{KeyGzip: gz(t, []byte(enc.Data[KeyPlain]))})
	if err != nil || got.Digest != b.Digest {
		t.Fatalf("compressed: %v", err)
	}
}

func TestEncodeRefusesABundleChangedAfterSeal(t *testing.T) {
	b := sample(t)
	b.Packs[0].Generation = 3
	if _, err := Encode(b); err == nil || !strings.Contains(err.Error(), "changed after it was sealed") {
		t.Fatalf("Encode: %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	b := sample(t)
	enc, err := Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	good := enc.Data[KeyPlain]
	tampered := strings.Replace(good, `"generation":2`, `"generation":9`, 1)
	// edit rewrites one member of the stored document.
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(good))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, err := marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	tests := []struct {
		name       string
		data       map[string]string
		binaryData map[string][]byte
		want       []string
	}{
		{"a tampered document, naming both digests", map[string]string{KeyPlain: tampered}, nil,
			[]string{"digest mismatch", b.Digest, "sha256:"}},
		{"a bundle without digest", map[string]string{KeyPlain: edit(func(m map[string]any) { m["digest"] = "" })}, nil,
			[]string{"carries no digest"}},
		{"both keys", map[string]string{KeyPlain: good}, map[string][]byte{KeyGzip: gz(t, []byte(good))},
			[]string{"both"}},
		{"neither key", map[string]string{"other": good}, nil, []string{"neither"}},
		{"a payload that is not gzip", nil, map[string][]byte{KeyGzip: []byte(good)}, []string{KeyGzip}},
		{"a duplicate key ([OAR-DOC-1])", map[string]string{KeyPlain: strings.Replace(good, `{"capability":`, `{"digest":"x","capability":`, 1)}, nil,
			[]string{"duplicate key", "OAR-DOC-1"}},
		{"an unknown member", map[string]string{KeyPlain: edit(func(m map[string]any) { m["extra"] = true })}, nil,
			[]string{"unknown member", "extra"}},
		{"a fractional generation", map[string]string{KeyPlain: strings.Replace(good, `"generation":2`, `"generation":2.5`, 1)}, nil,
			[]string{"packs[0].generation must be an integer"}},
		{"a missing member", map[string]string{KeyPlain: edit(func(m map[string]any) { delete(m, "configs") })}, nil,
			[]string{`missing member "configs"`}},
		{"trailing data", map[string]string{KeyPlain: good + "{}"}, nil, []string{"after the JSON value"}},
		{"not JSON", map[string]string{KeyPlain: "capability: {}"}, nil, []string{"bundle:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.data, tt.binaryData)
			if err == nil {
				t.Fatal("Decode accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDecodeBoundsDecompression(t *testing.T) {
	bomb := gz(t, bytes.Repeat([]byte(" "), MaxDecodedSize+1))
	if _, err := Decode(nil, map[string][]byte{KeyGzip: bomb}); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("Decode of a gzip bomb: %v", err)
	}
}

func TestLoadNamesStageAndOwner(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(b *Bundle)
		stage  string
		owner  string
		index  int
		clause string
	}{
		{"capability", func(b *Bundle) { b.Capability["host"] = "Not A Host" }, StageCapability, "", -1, "OAR-FACT-21"},
		{"rules", func(b *Bundle) {
			b.Packs[1].Rules = append(b.Packs[1].Rules, rule(t, "beta.sec", "BAD", `"kind":"weird"`))
		}, StageRules, "beta", 1, "OAR-DOC-10"},
		{"configs", func(b *Bundle) {
			b.Configs = append(b.Configs, Config{Name: "late", Document: config(t, `{"oar_config":"1.0","disable":["nope.sec/X"]}`)})
		}, StageConfigs, "late", -1, "OAR-CFG-4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sample(t)
			tt.edit(b)
			_, err := Load(b)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load: %v, want a *LoadError", err)
			}
			if le.Stage != tt.stage || len(le.Errors) == 0 || len(le.Owners) != len(le.Errors) {
				t.Fatalf("stage %q, %d errors, %d owners", le.Stage, len(le.Errors), len(le.Owners))
			}
			e := le.Errors[0]
			if le.Owners[0] != tt.owner || e.Index != tt.index || e.Clause != tt.clause {
				t.Errorf("owner %q, %+v; want owner %q, index %d, %s", le.Owners[0], *e, tt.owner, tt.index, tt.clause)
			}
			if tt.owner != "" && !strings.Contains(err.Error(), tt.owner) {
				t.Errorf("error %q does not name %q", err, tt.owner)
			}
		})
	}
}
