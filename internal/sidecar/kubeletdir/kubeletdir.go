// Package kubeletdir lays a ConfigMap's keys out in a directory the way the kubelet's
// atomic writer does for a ConfigMap volume (the sidecar mounts the bundle as a
// directory, never with subPath, so that it sees updates): the keys in a timestamped
// directory, "..data" a symlink to it, and one symlink per key to "..data/<key>". An
// update writes a new timestamped directory and renames a new "..data" over the old one,
// so a reader going through "..data" sees one version or the other, never a mix.
//
// It feeds oar-engine a mounted bundle without a kubelet: the sidecar's tests and the
// load generator (hack/loadgen) use it.
package kubeletdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
)

const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
)

// Dir is a directory the kubelet would manage. It is not safe for concurrent use.
type Dir struct {
	// Path is the directory, which must exist.
	Path string
	ts   string
	keys []string
}

// New returns the Dir at path, which must exist and be empty or hold only what an
// earlier Dir at path wrote.
func New(path string) *Dir { return &Dir{Path: path} }

// PublishBundle encodes b for a ConfigMap and publishes it.
func (d *Dir) PublishBundle(b *bundle.Bundle) error {
	enc, err := bundle.Encode(b)
	if err != nil {
		return fmt.Errorf("kubeletdir: %w", err)
	}
	return d.Publish(enc.Data, enc.BinaryData)
}

// Publish replaces the directory's content with a ConfigMap's data and binaryData, in
// the kubelet's atomic writer's order: write the new timestamped directory, add the
// symlinks of new keys (dangling until the swap), swap "..data", remove the symlinks of
// vanished keys, remove the old directory.
func (d *Dir) Publish(data map[string]string, binaryData map[string][]byte) error {
	ts, err := os.MkdirTemp(d.Path, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("kubeletdir: %w", err)
	}
	ts = filepath.Base(ts)
	var keys []string
	write := func(key string, p []byte) error {
		keys = append(keys, key)
		return os.WriteFile(filepath.Join(d.Path, ts, key), p, 0o644)
	}
	for k, v := range data {
		if err := write(k, []byte(v)); err != nil {
			return fmt.Errorf("kubeletdir: %w", err)
		}
	}
	for k, v := range binaryData {
		if err := write(k, v); err != nil {
			return fmt.Errorf("kubeletdir: %w", err)
		}
	}
	for _, k := range keys {
		err := os.Symlink(filepath.Join(dataLink, k), filepath.Join(d.Path, k))
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("kubeletdir: %w", err)
		}
	}
	tmp := filepath.Join(d.Path, dataLinkTmp)
	if err := os.Symlink(ts, tmp); err != nil {
		return fmt.Errorf("kubeletdir: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(d.Path, dataLink)); err != nil {
		return fmt.Errorf("kubeletdir: swapping %s: %w", dataLink, err)
	}
	if err := d.cleanup(keys); err != nil {
		return err
	}
	d.ts, d.keys = ts, keys
	return nil
}

// cleanup removes the symlinks of the previous version's keys that keys lacks, and the
// previous timestamped directory.
func (d *Dir) cleanup(keys []string) error {
	current := map[string]bool{}
	for _, k := range keys {
		current[k] = true
	}
	for _, k := range d.keys {
		if !current[k] {
			if err := os.Remove(filepath.Join(d.Path, k)); err != nil {
				return fmt.Errorf("kubeletdir: %w", err)
			}
		}
	}
	if d.ts != "" {
		if err := os.RemoveAll(filepath.Join(d.Path, d.ts)); err != nil {
			return fmt.Errorf("kubeletdir: %w", err)
		}
	}
	return nil
}
