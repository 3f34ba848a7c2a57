package bundle

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// kubeletVolume lays a ConfigMap volume out the way the kubelet's atomic writer does:
// the keys in a timestamped directory, ..data pointing at it, and one symlink per key
// to ..data/<key>.
type kubeletVolume struct {
	t    *testing.T
	dir  string
	ts   string
	keys []string
	n    int
}

func newVolume(t *testing.T) *kubeletVolume {
	return &kubeletVolume{t: t, dir: t.TempDir()}
}

func (v *kubeletVolume) must(err error) {
	v.t.Helper()
	if err != nil {
		v.t.Fatal(err)
	}
}

// stage writes a new timestamped directory holding enc and creates the symlinks of
// its keys, as the writer does before the swap (they dangle until ..data moves).
func (v *kubeletVolume) stage(enc Encoded) (ts string, keys []string) {
	v.t.Helper()
	v.n++
	ts = fmt.Sprintf("..2025_01_01_00_00_%02d.000000001", v.n)
	v.must(os.Mkdir(filepath.Join(v.dir, ts), 0o755))
	write := func(key string, p []byte) {
		v.must(os.WriteFile(filepath.Join(v.dir, ts, key), p, 0o644))
		keys = append(keys, key)
		link := filepath.Join(v.dir, key)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			v.must(os.Symlink(filepath.Join(dataLink, key), link))
		}
	}
	for k, s := range enc.Data {
		write(k, []byte(s))
	}
	for k, p := range enc.BinaryData {
		write(k, p)
	}
	return ts, keys
}

// swap renames a new ..data over the old one.
func (v *kubeletVolume) swap(ts string) {
	v.t.Helper()
	tmp := filepath.Join(v.dir, "..data_tmp")
	v.must(os.Symlink(ts, tmp))
	v.must(os.Rename(tmp, filepath.Join(v.dir, dataLink)))
}

// cleanup removes the symlinks of keys no longer present and the old directory.
func (v *kubeletVolume) cleanup(oldTS string, oldKeys, keys []string) {
	v.t.Helper()
	for _, k := range oldKeys {
		if !slices.Contains(keys, k) {
			v.must(os.Remove(filepath.Join(v.dir, k)))
		}
	}
	if oldTS != "" {
		v.must(os.RemoveAll(filepath.Join(v.dir, oldTS)))
	}
}

// publish is a whole update.
func (v *kubeletVolume) publish(enc Encoded) {
	v.t.Helper()
	ts, keys := v.stage(enc)
	v.swap(ts)
	v.cleanup(v.ts, v.keys, keys)
	v.ts, v.keys = ts, keys
}

func wantDigest(t *testing.T, dir, digest string) {
	t.Helper()
	b, err := ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	if b.Digest != digest {
		t.Fatalf("ReadDir read %s, want %s", b.Digest, digest)
	}
}

func TestReadDirFollowsTheKubeletAtomicSwap(t *testing.T) {
	small := sample(t)
	plain, err := Encode(small)
	if err != nil {
		t.Fatal(err)
	}
	large := mustAssemble(t, Input{Capability: capability(t), Packs: benchPacks(t, 120, 10)})
	if !large.Encoded.Compressed {
		t.Fatal("the large bundle is not compressed")
	}

	v := newVolume(t)
	if _, err := ReadDir(v.dir); err == nil {
		t.Fatal("ReadDir of an empty volume succeeded")
	}
	v.publish(plain)
	wantDigest(t, v.dir, small.Digest)
	if target, _ := os.Readlink(filepath.Join(v.dir, KeyPlain)); target != filepath.Join(dataLink, KeyPlain) {
		t.Fatalf("the layout is not the kubelet's: %s -> %s", KeyPlain, target)
	}

	// Plain to compressed, step by step: each intermediate state reads one whole bundle.
	ts, keys := v.stage(large.Encoded)
	wantDigest(t, v.dir, small.Digest) // bundle.json.gz dangles before the swap
	v.swap(ts)
	wantDigest(t, v.dir, large.Bundle.Digest) // bundle.json dangles after it
	v.cleanup(v.ts, v.keys, keys)
	v.ts, v.keys = ts, keys
	wantDigest(t, v.dir, large.Bundle.Digest)
	if _, err := os.Lstat(filepath.Join(v.dir, KeyPlain)); !os.IsNotExist(err) {
		t.Fatalf("%s still present after the swap: %v", KeyPlain, err)
	}

	// And back.
	v.publish(plain)
	wantDigest(t, v.dir, small.Digest)
}

func TestReadDirReadsAPlainDirectory(t *testing.T) {
	b := sample(t)
	enc, err := Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, KeyPlain), []byte(enc.Data[KeyPlain]), 0o644); err != nil {
		t.Fatal(err)
	}
	wantDigest(t, dir, b.Digest)
	if _, err := ReadDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("ReadDir of a missing directory succeeded")
	}
}

func TestReadDirDuringSwapsReadsOneWholeBundle(t *testing.T) {
	first := sample(t)
	second := sample(t)
	second.Packs = second.Packs[:1]
	if err := second.Seal(); err != nil {
		t.Fatal(err)
	}
	v := newVolume(t)
	var encs []Encoded
	for _, b := range []*Bundle{first, second} {
		enc, err := Encode(b)
		if err != nil {
			t.Fatal(err)
		}
		encs = append(encs, enc)
	}
	v.publish(encs[0])
	done := make(chan struct{})
	stop := make(chan struct{})
	// The swapper publishes the two versions in turn, as fast as a busy kubelet could;
	// it may not call t.Fatal, so it stops at its first error.
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			ts := filepath.Join(v.dir, fmt.Sprintf("..2025_01_02_00_00_00.%09d", i))
			tmp := filepath.Join(v.dir, "..data_tmp")
			if os.Mkdir(ts, 0o755) != nil ||
				os.WriteFile(filepath.Join(ts, KeyPlain), []byte(encs[i%2].Data[KeyPlain]), 0o644) != nil ||
				os.Symlink(filepath.Base(ts), tmp) != nil ||
				os.Rename(tmp, filepath.Join(v.dir, dataLink)) != nil ||
				os.RemoveAll(filepath.Join(v.dir, v.ts)) != nil {
				return
			}
			v.ts = filepath.Base(ts)
		}
	}()
	for range 200 {
		b, err := ReadDir(v.dir)
		if err != nil {
			close(stop)
			<-done
			t.Fatalf("ReadDir during swaps: %v", err)
		}
		if b.Digest != first.Digest && b.Digest != second.Digest {
			t.Fatalf("ReadDir read %s, neither version", b.Digest)
		}
	}
	close(stop)
	<-done
}
