// Package bundle is the bundle format the controller, the admission webhook, the engine
// sidecar and the oarctl CLI share: one JSON
// document holding a capability (spec section 8.2), every published rule pack (section
// 2, [OAR-DOC-31]) and every published operator configuration (section 9, [OAR-CFG-7]),
// sealed with a digest and stored in a ConfigMap.
//
// It provides the document and its digest (Bundle, Seal), the ConfigMap encoding with
// compression and the size limit (Encode, Decode, ReadDir for a mounted ConfigMap that
// follows the kubelet's atomic "..data" swap), loading a bundle with the engine (Load),
// and the deterministic assembly (Assemble, which lists its rules): which generation
// of each pack and configuration a new bundle publishes, and why the others are not —
// duplicate identifiers [OAR-DOC-9], unresolved references [OAR-EVAL-13] [OAR-OPS-5]
// [OAR-FIRE-11], suppression cycles [OAR-EVAL-16], suppressed mandatory rules
// [OAR-EVAL-17] [OAR-OPS-7], configurations naming absent rules [OAR-CFG-4], size.
// It imports the standard library and internal/engine only.
package bundle

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// Bundle is the published document: a capability and what is enforced against it.
type Bundle struct {
	// Capability is the capability document (decoded JSON, json.Number numbers).
	Capability map[string]any `json:"capability"`
	// Packs is every published pack. Assemble lists them by (creation time, name), an
	// order that carries no meaning ([OAR-DOC-31]) but keeps the digest stable.
	Packs []Pack `json:"packs"`
	// Configs is every published configuration, in application order ([OAR-CFG-7]).
	Configs []Config `json:"configs"`
	// Digest is "sha256:<hex>" of the canonical JSON of everything but the digest.
	Digest string `json:"digest"`
}

// Pack is one published generation of a RulePack.
type Pack struct {
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Rules      []any  `json:"rules"`
}

// Config is one published generation of an OperatorConfig.
type Config struct {
	Name       string         `json:"name"`
	Generation int64          `json:"generation"`
	Order      int64          `json:"order"`
	Document   map[string]any `json:"document"`
}

// ConfigMap keys and limits.
const (
	// KeyPlain holds the bundle JSON in data when it is at most PlainLimit bytes.
	KeyPlain = "bundle.json"
	// KeyGzip holds the gzip-compressed bundle JSON in binaryData otherwise.
	KeyGzip = "bundle.json.gz"
	// PlainLimit is the largest bundle stored uncompressed.
	PlainLimit = 512 << 10
	// ConfigMapLimit bounds data plus binaryData: the API server's 1 MiB less a
	// margin for the object's metadata.
	ConfigMapLimit = 1<<20 - 16<<10
	// MaxDecodedSize bounds the decompressed bundle Decode accepts, so a small
	// compressed payload cannot expand without limit.
	MaxDecodedSize = 64 << 20
	// digestPrefix starts every digest.
	digestPrefix = "sha256:"
)

// ErrTooLarge is matched (errors.Is) by every error reporting a bundle over ConfigMapLimit
// stored, or over MaxDecodedSize decompressed.
var ErrTooLarge = errors.New("bundle too large for a ConfigMap")

// TooLargeError reports the sizes of a bundle that does not fit in a ConfigMap, or that
// Decode would refuse to decompress.
type TooLargeError struct {
	// Plain is the size of the bundle JSON; Encoded the size stored (compressed), 0 when
	// Plain alone is over its limit.
	Plain, Encoded int
	// Limit is the limit exceeded: ConfigMapLimit for Encoded, MaxDecodedSize for Plain.
	Limit int
}

func (e *TooLargeError) Error() string {
	return "bundle too large for a ConfigMap: " + e.sizes()
}

// sizes says which size is over which limit.
func (e *TooLargeError) sizes() string {
	if e.Encoded == 0 {
		return fmt.Sprintf("%d bytes of JSON, over the %d bytes a bundle may decompress to", e.Plain, e.Limit)
	}
	return fmt.Sprintf("%d bytes of JSON compress to %d bytes, over the ConfigMap limit of %d", e.Plain, e.Encoded, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// canonical returns the canonical JSON of b without its digest: encoding/json (map keys
// sorted, json.Number text kept exactly), no HTML escaping, no trailing newline.
func canonical(b *Bundle) ([]byte, error) {
	c := *b
	c.Digest = ""
	return marshal(&c)
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func digestOf(canon []byte) string {
	sum := sha256.Sum256(canon)
	return digestPrefix + hex.EncodeToString(sum[:])
}

// ComputeDigest returns the digest of b's content, ignoring b.Digest.
func (b *Bundle) ComputeDigest() (string, error) {
	canon, err := canonical(b)
	if err != nil {
		return "", fmt.Errorf("bundle: encoding for the digest: %w", err)
	}
	return digestOf(canon), nil
}

// Seal sets b.Digest to the digest of b's content.
func (b *Bundle) Seal() error {
	d, err := b.ComputeDigest()
	if err != nil {
		return err
	}
	b.Digest = d
	return nil
}

// Encoded is a bundle laid out for a ConfigMap: exactly one of Data[KeyPlain] and
// BinaryData[KeyGzip] is set.
type Encoded struct {
	Data       map[string]string
	BinaryData map[string][]byte
	// Digest is the bundle's digest, also for the rules.oar.dev/bundle-digest annotation.
	Digest string
	// Size is the bytes counted against the ConfigMap limit (the values of data and
	// binaryData, as the API server counts them).
	Size int
	// Compressed says the bundle is in BinaryData[KeyGzip].
	Compressed bool
}

// Encode lays b out for a ConfigMap: the JSON in data when it is at most PlainLimit
// bytes, gzip (best compression) in binaryData otherwise. A bundle over ConfigMapLimit
// stored, or over MaxDecodedSize of JSON (which Decode would refuse), is refused with a
// *TooLargeError. An unsealed bundle is encoded with its computed
// digest; a sealed one whose digest no longer matches its content is refused.
func Encode(b *Bundle) (Encoded, error) {
	canon, err := canonical(b)
	if err != nil {
		return Encoded{}, fmt.Errorf("bundle: encoding: %w", err)
	}
	d := digestOf(canon)
	if b.Digest != "" && b.Digest != d {
		return Encoded{}, fmt.Errorf("bundle: the bundle changed after it was sealed: it carries digest %s, its content has digest %s", b.Digest, d)
	}
	return encodeCanonical(canon, d, newCompressor())
}

// encodeCanonical finishes Encode from the canonical JSON and its digest.
func encodeCanonical(canon []byte, digest string, z *compressor) (Encoded, error) {
	full, err := withDigest(canon, digest)
	if err != nil {
		return Encoded{}, err
	}
	if len(full) <= PlainLimit {
		return Encoded{Data: map[string]string{KeyPlain: string(full)}, Digest: digest, Size: len(full)}, nil
	}
	if len(full) > MaxDecodedSize {
		return Encoded{}, &TooLargeError{Plain: len(full), Limit: MaxDecodedSize}
	}
	gz := z.compress(full)
	if len(gz) > ConfigMapLimit {
		return Encoded{}, &TooLargeError{Plain: len(full), Encoded: len(gz), Limit: ConfigMapLimit}
	}
	return Encoded{BinaryData: map[string][]byte{KeyGzip: gz}, Digest: digest, Size: len(gz), Compressed: true}, nil
}

// emptyDigest ends the canonical JSON, whose digest member is last and empty.
var emptyDigest = []byte(`"digest":""}`)

// withDigest turns canonical JSON into the stored JSON by filling in the digest, which
// is exactly what encoding the sealed bundle produces (the digest is the last member
// and needs no escaping).
func withDigest(canon []byte, digest string) ([]byte, error) {
	if !bytes.HasSuffix(canon, emptyDigest) {
		return nil, errors.New("bundle: canonical JSON does not end with the digest member")
	}
	head := canon[:len(canon)-2]
	out := make([]byte, 0, len(canon)+len(digest))
	out = append(out, head...)
	out = append(out, digest...)
	return append(out, '"', '}'), nil
}

// plainSizeBound says how large stored JSON of n bytes can be once encoded: itself when
// stored plain, and gzip's worst case (stored blocks) otherwise.
func plainSizeBound(n int) int {
	if n <= PlainLimit {
		return n
	}
	return n + n/1000 + 64
}

// compressor reuses one gzip writer, whose best-compression state is large.
type compressor struct {
	w   *gzip.Writer
	buf bytes.Buffer
}

func newCompressor() *compressor { return &compressor{} }

func (z *compressor) compress(p []byte) []byte {
	z.buf.Reset()
	if z.w == nil {
		// BestCompression is a valid level, so NewWriterLevel cannot fail.
		z.w, _ = gzip.NewWriterLevel(&z.buf, gzip.BestCompression)
	} else {
		z.w.Reset(&z.buf)
	}
	// Writes to a bytes.Buffer do not fail.
	_, _ = z.w.Write(p)
	_ = z.w.Close()
	return bytes.Clone(z.buf.Bytes())
}

// Decode reads a bundle from a ConfigMap's data and binaryData: KeyPlain or KeyGzip,
// exactly one of them. The JSON is read strictly (exact numbers, duplicate keys
// refused, [OAR-DOC-1]) and the digest is verified.
func Decode(data map[string]string, binaryData map[string][]byte) (*Bundle, error) {
	plain, hasPlain := data[KeyPlain]
	gz, hasGz := binaryData[KeyGzip]
	var raw []byte
	switch {
	case hasPlain && hasGz:
		return nil, fmt.Errorf("bundle: both %s and %s are present; a bundle ConfigMap holds exactly one", KeyPlain, KeyGzip)
	case hasPlain:
		raw = []byte(plain)
	case hasGz:
		var err error
		if raw, err = gunzip(gz); err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", KeyGzip, err)
		}
	default:
		return nil, fmt.Errorf("bundle: neither %s nor %s is present", KeyPlain, KeyGzip)
	}
	return decodeJSON(raw)
}

func gunzip(p []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(p))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxDecodedSize+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxDecodedSize {
		return nil, fmt.Errorf("decompresses to more than %d bytes", MaxDecodedSize)
	}
	return out, r.Close()
}

// decodeJSON reads the bundle document and verifies its digest.
func decodeJSON(raw []byte) (*Bundle, error) {
	v, err := engine.DecodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	b, err := fromValue(v)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	got, err := b.ComputeDigest()
	if err != nil {
		return nil, err
	}
	if b.Digest != got {
		return nil, fmt.Errorf("bundle: digest mismatch: the bundle carries %s but its content has digest %s", quoteDigest(b.Digest), got)
	}
	return b, nil
}

func quoteDigest(d string) string {
	if d == "" {
		return "no digest"
	}
	return d
}

// fromValue converts the decoded document into a Bundle. A JSON null stays nil so the
// document re-encodes to the text its digest covers.
func fromValue(v any) (*Bundle, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the bundle is not a JSON object")
	}
	if err := closed(obj, "", "capability", "packs", "configs", "digest"); err != nil {
		return nil, err
	}
	b := &Bundle{}
	var err error
	if b.Capability, err = objectOrNull(obj["capability"], "capability"); err != nil {
		return nil, err
	}
	d, ok := obj["digest"].(string)
	if !ok {
		return nil, errors.New("digest must be a string")
	}
	b.Digest = d
	packs, err := listOrNull(obj["packs"], "packs")
	if err != nil {
		return nil, err
	}
	if packs != nil {
		b.Packs = make([]Pack, len(packs))
	}
	for i, p := range packs {
		path := fmt.Sprintf("packs[%d]", i)
		m, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s must be an object", path)
		}
		if err := closed(m, path, "name", "generation", "rules"); err != nil {
			return nil, err
		}
		pk := &b.Packs[i]
		if pk.Name, err = str(m["name"], path+".name"); err != nil {
			return nil, err
		}
		if pk.Generation, err = integer(m["generation"], path+".generation"); err != nil {
			return nil, err
		}
		if pk.Rules, err = listOrNull(m["rules"], path+".rules"); err != nil {
			return nil, err
		}
	}
	configs, err := listOrNull(obj["configs"], "configs")
	if err != nil {
		return nil, err
	}
	if configs != nil {
		b.Configs = make([]Config, len(configs))
	}
	for i, c := range configs {
		path := fmt.Sprintf("configs[%d]", i)
		m, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s must be an object", path)
		}
		if err := closed(m, path, "name", "generation", "order", "document"); err != nil {
			return nil, err
		}
		cf := &b.Configs[i]
		if cf.Name, err = str(m["name"], path+".name"); err != nil {
			return nil, err
		}
		if cf.Generation, err = integer(m["generation"], path+".generation"); err != nil {
			return nil, err
		}
		if cf.Order, err = integer(m["order"], path+".order"); err != nil {
			return nil, err
		}
		if cf.Document, err = objectOrNull(m["document"], path+".document"); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// closed refuses a member outside names and a missing one.
func closed(obj map[string]any, path string, names ...string) error {
	for _, n := range names {
		if _, ok := obj[n]; !ok {
			return fmt.Errorf("%s: missing member %q", displayPath(path), n)
		}
	}
	if len(obj) != len(names) {
		var extra []string
		for k := range obj {
			known := false
			for _, n := range names {
				known = known || k == n
			}
			if !known {
				extra = append(extra, fmt.Sprintf("%q", k))
			}
		}
		slices.Sort(extra)
		return fmt.Errorf("%s: unknown member %s (members are %s)", displayPath(path), strings.Join(extra, ", "), strings.Join(names, ", "))
	}
	return nil
}

func displayPath(p string) string {
	if p == "" {
		return "bundle"
	}
	return p
}

func objectOrNull(v any, path string) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be an object", path)
	}
	return m, nil
}

func listOrNull(v any, path string) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list", path)
	}
	return l, nil
}

func str(v any, path string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string", path)
	}
	return s, nil
}

func integer(v any, path string) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s must be an integer", path)
	}
	i, err := n.Int64()
	if err != nil || n.String() != strconv.FormatInt(i, 10) {
		return 0, fmt.Errorf("%s must be an integer; got %s", path, n)
	}
	return i, nil
}
