package bundle

import (
	"testing"
)

// FuzzDecode feeds arbitrary ConfigMap content to Decode: it never panics, and a bundle
// it accepts encodes and decodes again to the same digest.
func FuzzDecode(f *testing.F) {
	enc, err := Encode(sample(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(1), enc.Data[KeyPlain], []byte(nil))
	f.Add(uint8(2), "", gz(f, []byte(enc.Data[KeyPlain])))
	f.Add(uint8(3), enc.Data[KeyPlain], gz(f, []byte(enc.Data[KeyPlain])))
	f.Fuzz(func(t *testing.T, keys uint8, plain string, compressed []byte) {
		data := map[string]string{}
		binaryData := map[string][]byte{}
		if keys&1 != 0 {
			data[KeyPlain] = plain
		}
		if keys&2 != 0 {
			binaryData[KeyGzip] = compressed
		}
		b, err := Decode(data, binaryData)
		if err != nil {
			return
		}
		again, err := Encode(b)
		if err != nil {
			t.Fatalf("a decoded bundle does not encode: %v", err)
		}
		round, err := Decode(again.Data, again.BinaryData)
		if err != nil || round.Digest != b.Digest {
			t.Fatalf("a decoded bundle does not round-trip: %v", err)
		}
	})
}
