package reload

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
)

// DefaultInterval is how often a Watcher polls when given no interval.
const DefaultInterval = 2 * time.Second

// Watcher polls a mounted bundle directory and installs each new bundle in its Source.
//
// It polls rather than subscribing to inotify: the kubelet publishes an update by
// renaming a new "..data" symlink over the old one, an event inotify reports
// unreliably through symlinks, and a poll every few seconds costs two stat calls. What
// it compares is the "..data" target and the size and modification time of the bundle
// keys read through it, which also covers a plain directory written in place. A
// directory state is tried once: a bundle that fails is not reloaded until the
// directory changes again.
type Watcher struct {
	Dir      string
	Interval time.Duration
	Source   *Source

	last  fingerprint
	tried bool
}

// fingerprint identifies one state of the directory.
type fingerprint struct {
	target      string
	plain, gzip fileState
	err         string
}

type fileState struct {
	exists bool
	size   int64
	mtime  int64
}

// Run polls until ctx ends, starting at once.
func (w *Watcher) Run(ctx context.Context) {
	PollEvery(ctx, w.Interval, func() { w.Poll() })
}

// PollEvery calls poll at once, then every interval (DefaultInterval when it is not
// positive) until ctx ends. Both watchers, of a bundle directory and of plain documents,
// poll this way.
func PollEvery(ctx context.Context, interval time.Duration, poll func()) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		poll()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll checks the directory once and installs its bundle when the directory changed
// since the last poll. It returns whether a new bundle was swapped in.
func (w *Watcher) Poll() bool {
	fp := w.fingerprint()
	if w.tried && fp == w.last {
		return false
	}
	w.last, w.tried = fp, true
	if fp.err != "" {
		w.Source.Refuse(errors.New(fp.err))
		return false
	}
	b, err := bundle.ReadDir(w.Dir)
	if err != nil {
		w.Source.Refuse(fmt.Errorf("reading the bundle from %s: %w", w.Dir, err))
		return false
	}
	if cur := w.Source.Current(); cur != nil && cur.Digest() == b.Digest {
		w.Source.Remounted()
		return false
	}
	_, err = w.Source.Install(b)
	return err == nil
}

func (w *Watcher) fingerprint() fingerprint {
	var fp fingerprint
	target, err := os.Readlink(filepath.Join(w.Dir, "..data"))
	switch {
	case err == nil:
		fp.target = target
	case errors.Is(err, fs.ErrNotExist):
		if _, statErr := os.Stat(w.Dir); statErr != nil {
			fp.err = fmt.Sprintf("reading the bundle directory: %v", statErr)
			return fp
		}
	default:
		fp.err = fmt.Sprintf("reading the bundle directory: %v", err)
		return fp
	}
	fp.plain = stat(filepath.Join(w.Dir, bundle.KeyPlain))
	fp.gzip = stat(filepath.Join(w.Dir, bundle.KeyGzip))
	return fp
}

// stat describes a key through its symlink; a missing or dangling one does not exist.
func stat(path string) fileState {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{}
	}
	return fileState{exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
