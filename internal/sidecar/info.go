package sidecar

import (
	"net/http"
	"strconv"

	"github.com/oar-operator/oar-operator/internal/sidecar/openapi"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

// BundleInfo is the body of GET /v1/bundle: what is served and the reload history, as
// of one moment (reload.Source.Snapshot). It is answered also before the first bundle
// loads, so a sidecar that is not ready says why (Status.LastFailure).
type BundleInfo struct {
	Ready bool `json:"ready"`
	// Digest is the served bundle's digest, also the rules.oar.dev/bundle-digest
	// annotation of its ConfigMap.
	Digest string `json:"digest,omitempty"`
	// Host is the served capability's host.
	Host      string        `json:"host,omitempty"`
	Directory string        `json:"directory,omitempty"`
	RuleCount int           `json:"rule_count"`
	Packs     []PackInfo    `json:"packs"`
	Configs   []ConfigInfo  `json:"configs"`
	Status    reload.Status `json:"status"`
}

// PackInfo is one served pack: its generation and the qualified ids of its rules.
type PackInfo struct {
	Name       string   `json:"name"`
	Generation int64    `json:"generation"`
	Rules      []string `json:"rules"`
}

// ConfigInfo is one served configuration, in application order ([OAR-CFG-7]).
type ConfigInfo struct {
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Order      int64  `json:"order"`
}

func (s *Sidecar) bundleInfo(w http.ResponseWriter, _ *http.Request) {
	sv, status := s.source.Snapshot()
	info := BundleInfo{Directory: s.opt.BundleDir, Packs: []PackInfo{}, Configs: []ConfigInfo{}, Status: status}
	if sv != nil {
		w.Header().Set(DigestHeader, sv.Digest())
		info.Ready, info.Digest, info.Host = true, sv.Digest(), sv.Loaded.Capability.Host
		info.RuleCount = len(sv.Loaded.RuleSet.Rules)
		index := map[string]int{}
		for i, p := range sv.Bundle.Packs {
			index[p.Name] = i
			info.Packs = append(info.Packs, PackInfo{Name: p.Name, Generation: p.Generation, Rules: []string{}})
		}
		for i, r := range sv.Loaded.RuleSet.Rules {
			p := &info.Packs[index[sv.Loaded.RuleOwner[i]]]
			p.Rules = append(p.Rules, r.QID)
		}
		for _, c := range sv.Bundle.Configs {
			info.Configs = append(info.Configs, ConfigInfo{Name: c.Name, Generation: c.Generation, Order: c.Order})
		}
	}
	writeJSON(w, http.StatusOK, info)
}

// capability answers the served capability document, exactly as published.
func (s *Sidecar) capability(w http.ResponseWriter, _ *http.Request) {
	sv := s.source.Current()
	if sv == nil {
		writeProblem(w, http.StatusServiceUnavailable, Problem{Error: "no bundle is loaded yet; GET /v1/bundle shows why"})
		return
	}
	w.Header().Set(DigestHeader, sv.Digest())
	writeJSON(w, http.StatusOK, sv.Bundle.Capability)
}

// openAPIDocument answers the API's OpenAPI document, as committed.
func openAPIDocument(w http.ResponseWriter, _ *http.Request) {
	writeBody(w, http.StatusOK, openapi.Document)
}

// Probe is the body of /healthz and /readyz.
type Probe struct {
	Status string `json:"status"`
	Bundle string `json:"bundle,omitempty"`
	Error  string `json:"error,omitempty"`
	// SessionStore is the shared session store's state, when there is one.
	SessionStore string `json:"session_store,omitempty"`
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Probe{Status: "ok"})
}

// readyz is ready exactly when a bundle is loaded; a later refused bundle does not
// make it unready, since the loaded one keeps serving. It reports the shared session
// store's state but never fails on it: every replica shares the store, so an outage
// would take all of them out of the Service at once, turning "rules needing session
// state follow their on_error" (what the rules' authors chose) into "nothing is
// decided at all", and a blip would flap every replica together. A server whose
// version refuses it (redisstore.ErrServerUnusable: too old, or unreadable) is
// reported the same way, as unusable, and one that answers with an error reply as
// refusing calls (storeState).
func (s *Sidecar) readyz(w http.ResponseWriter, r *http.Request) {
	store := ""
	if st := s.opt.SharedSessions; st != nil {
		store = st.String() + ": reachable"
		if reply := st.VersionUnchecked(); reply != "" {
			store += ", its version unchecked (INFO answered " + strconv.Quote(reply) + ")"
		}
		if err := st.Ping(r.Context()); err != nil {
			store = st.String() + ": " + storeState(err) + " (rules needing session state follow their on_error): " + err.Error()
		}
	}
	if sv := s.source.Current(); sv != nil {
		writeJSON(w, http.StatusOK, Probe{Status: "ready", Bundle: sv.Digest(), SessionStore: store})
		return
	}
	p := Probe{Status: "not ready", Error: "no bundle is loaded yet", SessionStore: store}
	if f := s.source.Status().LastFailure; f != nil {
		p.Error += ": " + f.Error
	}
	writeJSON(w, http.StatusServiceUnavailable, p)
}
