package inject

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
)

// RegisterFlags defines on fs, each name after prefix, the flags that set o: the
// manager's --injector-* flags (prefix "injector-") and `oarctl inject`'s (no prefix) are
// these same definitions, so a rendering given the manager's values is the pod its
// webhook stores. A pod's rules.oar.dev/engine-* annotations override each of them.
// Call CheckFlags once fs is parsed.
func (o *Options) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.StringVar(&o.Image, prefix+"image", o.Image, "The oar-engine sidecar's image: the operator's own image and version.")
	fs.Func(prefix+"cpu-request", "The sidecar's CPU request (default "+o.CPURequest.String()+"; no CPU limit is set).", quantityFlag(&o.CPURequest))
	fs.Func(prefix+"memory-request", "The sidecar's memory request (default "+o.MemoryRequest.String()+").", quantityFlag(&o.MemoryRequest))
	fs.Func(prefix+"memory-limit", "The sidecar's memory limit (default "+o.MemoryLimit.String()+"); GOMEMLIMIT is 80% of it.", quantityFlag(&o.MemoryLimit))
	fs.Func(prefix+"session-store", "Where the sidecars share sessions unless a pod's "+AnnotationSessionStore+" says otherwise: memory (the default, each pod its own) or a redis:// or rediss:// URL without a password.", func(v string) error {
		if v == "" {
			o.SessionStore = ""
			return nil
		}
		store, err := ParseSessionStore(v)
		o.SessionStore = store
		return err
	})
	fs.Func(prefix+"session-store-secret", "The Secret, in each injected pod's namespace, whose key \"password\" is --"+prefix+"session-store's password; a pod naming its own store (or memory) does not get it.", func(v string) error {
		o.SessionStoreSecret = v
		return CheckSessionStoreSecret(v)
	})
	fs.Func(prefix+"session-store-pending-ttl", "How long a sidecar sharing sessions in Redis holds a session after the commit of an occurrence with events to publish, so a correction replaces its changes before other replicas read them (the engine's --session-store-pending-ttl; default "+redisstore.DefaultPendingTTL.String()+"): whole milliseconds, below the engine's session store timeout ("+redisstore.DefaultTimeout.String()+").", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 20ms", v)
		}
		o.SessionStorePendingTTL = d
		return redisstore.CheckPendingTTL(d, redisstore.DefaultTimeout, "the engine's --session-store-timeout")
	})
	fs.Func(prefix+"decision-log", "Whether the sidecars write their decision log (for oarctl replay) to stdout unless a pod's "+AnnotationDecisionLog+" says otherwise: off (the default) or stdout.", func(v string) error {
		on, err := ParseDecisionLog(v)
		o.DecisionLog = on
		return err
	})
	fs.Func(prefix+"decision-log-content", "How much of each occurrence's content the sidecars' decision log keeps unless a pod's "+AnnotationDecisionLogContent+" says otherwise: omit (the default: its length only), hash (its length and SHA-256) or full.", func(v string) error {
		o.DecisionLogContent = v
		return CheckDecisionLogContent(v)
	})
	fs.Func(prefix+"decision-log-sample", "The fraction of sessions the sidecars' decision log keeps, 0 to 1 (default 1), unless a pod's "+AnnotationDecisionLogSample+" says otherwise.", func(v string) error {
		o.DecisionLogSample = v
		return CheckDecisionLogSample(v)
	})
	fs.Func(prefix+"run-as-user", "The sidecars' securityContext.runAsUser, unless a pod's "+AnnotationRunAsUser+" says otherwise: auto (the default: the UID OpenShift's SCC gave the pod's containers where the pod has "+SCCAnnotation+", else the image's user and group 65532), none (never set; a pod running as root is refused) or a UID from 1 (always that user).", func(v string) error {
		r, err := ParseRunAsUser(v)
		r.From = "--" + prefix + "run-as-user"
		o.RunAsUser = r
		return err
	})
}

// CheckFlags refuses what the flags RegisterFlags defined with prefix set and which
// cannot work together; the error names the flags.
func (o Options) CheckFlags(prefix string) error {
	if !validImage(o.Image) {
		return fmt.Errorf("--%simage %q is not an image reference: it must be one without spaces, e.g. registry.example/oar-operator:v1.2.3", prefix, o.Image)
	}
	if o.SessionStoreSecret != "" && o.SessionStore == "" {
		return fmt.Errorf("--%ssession-store-secret names a password Secret but sessions stay in memory: set --%ssession-store to the redis:// or rediss:// URL of the store", prefix, prefix)
	}
	if o.MemoryLimit.Cmp(o.MemoryRequest) < 0 {
		return fmt.Errorf("--%smemory-limit %s is below --%smemory-request %s: it must be at least the request", prefix, o.MemoryLimit.String(), prefix, o.MemoryRequest.String())
	}
	return nil
}

// validImage reports whether image can be a container's image reference: the
// annotation and the flag refuse alike what the API server would refuse at the pod's
// creation, an empty reference or one with spaces.
func validImage(image string) bool {
	return image != "" && !strings.ContainsAny(image, " \t\r\n")
}

// quantityFlag parses a positive resource quantity into q.
func quantityFlag(q *resource.Quantity) func(string) error {
	return func(v string) error {
		p, err := resource.ParseQuantity(v)
		if err != nil || p.Sign() <= 0 {
			return fmt.Errorf("%q is not a positive quantity", v)
		}
		*q = p
		return nil
	}
}
