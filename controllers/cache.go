package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// decodedPacks keeps each pack generation's decoded rules between reconciles of one
// Capability, so a reconcile decodes only what changed. Entries of packs no longer
// listed are dropped at every reconcile.
type decodedPacks struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[types.UID]decodedPack
}

type decodedPack struct {
	generation int64
	input      bundle.PackInput
}

// inputs returns the assembly input of every pack, decoding only new generations.
func (d *decodedPacks) inputs(capability types.NamespacedName, packs []*rulesv1alpha1.RulePack) []bundle.PackInput {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[types.NamespacedName]map[types.UID]decodedPack{}
	}
	old := d.m[capability]
	next := make(map[types.UID]decodedPack, len(packs))
	out := make([]bundle.PackInput, 0, len(packs))
	for _, p := range packs {
		e, ok := old[p.UID]
		if !ok || e.generation != p.Generation {
			e = decodedPack{generation: p.Generation, input: resource.AssemblyPack(p)}
		}
		next[p.UID] = e
		out = append(out, e.input)
	}
	d.m[capability] = next
	return out
}

// forget drops what is kept for a Capability.
func (d *decodedPacks) forget(capability types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, capability)
}

// lastPublished keeps, per Capability, the bundle its ConfigMap held when this manager
// last wrote it or read it intact. Once a pack's spec has moved on to a generation that
// does not load, the ConfigMap is the only place its last good generation lives; when
// the ConfigMap is deleted or overwritten, the reconcile assembles against this copy and
// publishes it again rather than dropping enforcement that was working. It lasts as long
// as the process: a new leader starts from the ConfigMap.
type lastPublished struct {
	mu sync.Mutex
	m  map[types.NamespacedName]publication
}

// publication is a bundle, whose generations it holds, and what it is published
// without that an earlier bundle published (resource.LeftOutUIDsAnnotation).
type publication struct {
	bundle  *bundle.Bundle
	ids     *resource.PublishedUIDs
	leftOut *resource.PublishedUIDs
}

func (l *lastPublished) get(key types.NamespacedName) (publication, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.m[key]
	return p, ok
}

func (l *lastPublished) set(key types.NamespacedName, p publication) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[types.NamespacedName]publication{}
	}
	l.m[key] = p
}

func (l *lastPublished) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}

// burstWindow bounds how long status writes wait for a burst of changes to settle.
const burstWindow = time.Second

// changeCounter counts the pack and configuration events of each Capability. A
// reconcile that sees the count move while it ran knows another reconcile is queued
// for the same Capability, publishes its bundle and leaves the status writes to that
// one: during a burst (a GitOps sync applying hundreds of packs) the bundle keeps up
// with the changes instead of waiting for hundreds of status writes after each.
// Statuses are never held back longer than burstWindow.
type changeCounter struct {
	mu      sync.Mutex
	count   map[types.NamespacedName]uint64
	skipped map[types.NamespacedName]time.Time
}

func (c *changeCounter) changed(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count == nil {
		c.count = map[types.NamespacedName]uint64{}
	}
	c.count[key]++
}

func (c *changeCounter) get(key types.NamespacedName) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[key]
}

// deferStatus reports whether a reconcile that started at count seen may leave its
// status writes to the reconcile already queued.
func (c *changeCounter) deferStatus(key types.NamespacedName, seen uint64, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count[key] == seen {
		delete(c.skipped, key)
		return false
	}
	if c.skipped == nil {
		c.skipped = map[types.NamespacedName]time.Time{}
	}
	first, ok := c.skipped[key]
	if !ok {
		c.skipped[key] = now
		return true
	}
	if now.Sub(first) < burstWindow {
		return true
	}
	delete(c.skipped, key)
	return false
}

// writtenStatuses keeps, per Capability, the status this manager last wrote to each of
// its objects, as the API server returned it. The informer's copy of an object can lag
// behind that write, and the controller's own status writes trigger no reconcile: a
// status equal to a stale copy must not be taken as written. A status is skipped only
// when it equals both the object's copy and the last one written; otherwise it is
// written, and a stale copy's resourceVersion makes that a conflict, which requeues.
// Entries of objects no longer listed are dropped at every reconcile.
type writtenStatuses struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[types.UID]any
}

// retain drops what is kept for a Capability but for the objects in uids.
func (w *writtenStatuses) retain(capability types.NamespacedName, uids map[types.UID]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid := range w.m[capability] {
		if !uids[uid] {
			delete(w.m[capability], uid)
		}
	}
	if len(w.m[capability]) == 0 {
		delete(w.m, capability)
	}
}

// get returns the status last written to object uid, if one is kept.
func (w *writtenStatuses) get(capability types.NamespacedName, uid types.UID) (any, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.m[capability][uid]
	return st, ok
}

func (w *writtenStatuses) set(capability types.NamespacedName, uid types.UID, status any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]map[types.UID]any{}
	}
	if w.m[capability] == nil {
		w.m[capability] = map[types.UID]any{}
	}
	w.m[capability][uid] = status
}
