package chart

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// installation is one way of installing the operator: install puts it into namespace,
// returns the objects it consists of, and removes them when the test ends.
type installation struct {
	name      string
	namespace string
	install   func(t *testing.T, namespace string) []*unstructured.Unstructured
}

// installations are the chart in both certificate modes and config/default.
var installations = []installation{
	{"chart, self-managed certificates", "perm-self-managed", installChart("perm-self-managed", "")},
	{"chart, cert-manager", "perm-cert-manager", installChart("perm-cert-manager", "webhook: {certManagement: cert-manager}")},
	{"config/default", "oar-system", installKustomization},
}

// TestManagerRunsOnItsGrantedPermissions runs the manager binary with exactly the
// permissions each installation grants its ServiceAccount: the manager's client
// impersonates the ServiceAccount, so the API server's RBAC decides every call as it
// would in the cluster. The manager must do its whole job — elect a leader, reconcile,
// publish the bundle ConfigMap, write status and events, serve authorized metrics and,
// self-managed, issue its webhook certificate and inject the CA — and must be denied
// what it has no business doing: updating another webhook configuration (which would
// let it switch off the cluster's other admission controls) or another Secret, and with
// cert-manager touching webhook configurations or Secrets at all. The marker-level
// comparison (TestRolesGrantExactlyTheGeneratedRules) cannot show the grants suffice;
// this does.
func TestManagerRunsOnItsGrantedPermissions(t *testing.T) {
	bin := buildManager(t)
	for _, inst := range installations {
		t.Run(inst.name, func(t *testing.T) { runOnGrantedPermissions(t, bin, inst) })
	}
}

func runOnGrantedPermissions(t *testing.T, bin string, inst installation) {
	ctx := context.Background()
	ns := inst.namespace
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The API server cannot call the webhooks here (no Service routing), and they fail
	// closed, so the samples go in before the installation registers them.
	capability, pack := createSamples(t, ns)
	objs := inst.install(t, ns)

	dep := find[appsv1.Deployment](t, objs, "Deployment")
	sa := dep.Spec.Template.Spec.ServiceAccountName
	user := serviceaccountUser(ns, sa)
	c := dep.Spec.Template.Spec.Containers[0]
	args := slices.Clone(c.Args)
	selfManaged := slices.Contains(args, "--webhook-cert-mode=self-managed")

	// What the pod would have: the kubelet's mounts, the in-cluster namespace, ports.
	certDir, metricsCertDir := t.TempDir(), t.TempDir()
	probe, metrics := freeAddr(t), freeAddr(t)
	_, webhookPort, _ := net.SplitHostPort(freeAddr(t))
	args = append(args, "--health-probe-bind-address="+probe, "--metrics-bind-address="+metrics,
		"--webhook-port="+webhookPort, "--webhook-cert-dir="+certDir, "--leader-election-namespace="+ns,
		"--zap-encoder=console")
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--metrics-cert-dir=") }) {
		writeSelfSignedCert(t, metricsCertDir, "metrics")
		args = append(args, "--metrics-cert-dir="+metricsCertDir)
	}
	var secret corev1.Secret
	if selfManaged {
		secret = find[corev1.Secret](t, objs, "Secret")
		mountSecret(t, client.ObjectKeyFromObject(&secret), certDir)
	} else {
		writeSelfSignedCert(t, certDir, "webhook") // what cert-manager would mount
	}

	mgr := startManager(t, bin, args, impersonatingKubeconfig(t, user), ns)

	if selfManaged {
		vwc := find[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration")
		testpoll.Eventually(t, time.Minute, 200*time.Millisecond, "the manager's certificate in its Secret and its CA in the webhook configuration", func() (bool, string) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&secret), &secret); err != nil {
				return false, err.Error()
			}
			ca := secret.Data["ca.crt"]
			if len(ca) == 0 || len(secret.Data["tls.crt"]) == 0 {
				return false, fmt.Sprintf("Secret keys %v", slices.Sorted(maps.Keys(secret.Data)))
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&vwc), &vwc); err != nil {
				return false, err.Error()
			}
			for _, w := range vwc.Webhooks {
				if !bytes.Equal(w.ClientConfig.CABundle, ca) {
					return false, fmt.Sprintf("webhook %s has a caBundle of %d bytes, not the Secret's CA", w.Name, len(w.ClientConfig.CABundle))
				}
			}
			mwc := find[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration")
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&mwc), &mwc); err != nil {
				return false, err.Error()
			}
			for _, w := range mwc.Webhooks {
				if !bytes.Equal(w.ClientConfig.CABundle, ca) {
					return false, fmt.Sprintf("engine injector webhook %s has a caBundle of %d bytes, not the Secret's CA", w.Name, len(w.ClientConfig.CABundle))
				}
			}
			return true, ""
		})
	}
	testpoll.Eventually(t, time.Minute, 200*time.Millisecond, "the manager ready (webhooks registered)", func() (bool, string) {
		return mgr.ready(probe)
	})
	leaseID := flagValue(args, "--leader-election-id", "oar-operator.rules.oar.dev")
	var lease coordinationv1.Lease
	testpoll.Eventually(t, time.Minute, 200*time.Millisecond, "the manager leading", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaseID}, &lease); err != nil {
			return false, err.Error()
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", "no holder"
	})
	testpoll.Eventually(t, time.Minute, 200*time.Millisecond, "the samples published", func() (bool, string) {
		var state []string
		for _, o := range []client.Object{capability, pack} {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return false, err.Error()
			}
			if !meta.IsStatusConditionTrue(conditionsOf(o), "Ready") {
				state = append(state, fmt.Sprintf("%T %s: %v", o, o.GetName(), conditionsOf(o)))
			}
		}
		var cm corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: capability.Name + "-oar-bundle"}, &cm); err != nil {
			state = append(state, err.Error())
		}
		return len(state) == 0, strings.Join(state, "; ")
	})
	testpoll.Eventually(t, 30*time.Second, 200*time.Millisecond, "an event about the pack", func() (bool, string) {
		var events eventsv1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind == "RulePack" && e.Regarding.Name == pack.Name
		}), fmt.Sprintf("%d events, none regarding RulePack %s", len(events.Items), pack.Name)
	})
	scraped := checkMetrics(t, ns, objs, metrics)
	for _, want := range []string{
		fmt.Sprintf(`oar_operator_resource_ready{kind="RulePack",name=%q,namespace=%q,reason="Published"} 1`, pack.Name, ns),
		fmt.Sprintf(`oar_operator_bundle_info{capability=%q,digest=%q,namespace=%q} 1`, capability.Name, capability.Status.Bundle.Digest, ns),
	} {
		if !strings.Contains(scraped, want) {
			t.Errorf("the metrics endpoint does not serve %s", want)
		}
	}

	denied := []authorizationv1.ResourceAttributes{
		{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "another-admission-control"},
		{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "another-admission-control"},
		{Verb: "update", Resource: "secrets", Namespace: ns, Name: "another-secret"},
		{Verb: "get", Resource: "secrets", Namespace: "kube-system", Name: "another-secret"},
	}
	if !selfManaged {
		denied = append(denied,
			authorizationv1.ResourceAttributes{Verb: "list", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
			authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: ns, Name: "anything"})
	}
	for _, ra := range denied {
		if allowed(t, user, ra) {
			t.Errorf("%s may %s %s %q in %q; it must not", user, ra.Verb, ra.Resource, ra.Name, ra.Namespace)
		}
	}

	if err := mgr.stop(); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&lease), &lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the lease is still held by %s after a clean stop; the next leader waits for it to expire", *h)
	}
}

// installChart installs the chart with values as release (named like its namespace) the
// way `make deploy` does, and uninstalls it when the test ends.
func installChart(release, values string) func(*testing.T, string) []*unstructured.Unstructured {
	return func(t *testing.T, ns string) []*unstructured.Unstructured {
		ctx := context.Background()
		vals := map[string]any{}
		if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
			t.Fatal(err)
		}
		o := deployOptions(t, ns, release, vals)
		rel, err := Deploy(ctx, o)
		if err != nil {
			t.Fatalf("install: %v", err)
		}
		t.Cleanup(func() {
			if _, err := Undeploy(ctx, o); err != nil {
				t.Errorf("uninstall: %v", err)
			}
		})
		objs, err := decodeDocuments([]byte(rel.Manifest))
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
}

// installKustomization applies what `kubectl apply -k config/default` applies (but the
// CRDs, which the suite installed) and deletes it when the test ends.
func installKustomization(t *testing.T, ns string) []*unstructured.Unstructured {
	ctx := context.Background()
	objs := buildKustomization(t)
	var created []*unstructured.Unstructured
	t.Cleanup(func() {
		for _, o := range slices.Backward(created) {
			if err := env.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})
	for _, o := range objs {
		if o.GetNamespace() != "" && o.GetNamespace() != ns {
			t.Fatalf("config/default puts %s %s in namespace %s, not %s", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
		}
		switch o.GetKind() {
		case "CustomResourceDefinition":
			continue
		case "Namespace":
			if o.GetName() != ns {
				t.Fatalf("config/default creates namespace %s, not %s", o.GetName(), ns)
			}
			continue // created already, and never deleted here (nothing would finalize it)
		}
		if err := env.Client.Create(ctx, o.DeepCopy()); err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		created = append(created, o)
	}
	return objs
}

// buildKustomization returns the objects `kustomize build config/default` prints.
func buildKustomization(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(env.Root, "config", "default"))
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	data, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeDocuments(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// createSamples creates config/samples' Capability and RulePack in namespace ns.
func createSamples(t *testing.T, ns string) (*rulesv1alpha1.Capability, *rulesv1alpha1.RulePack) {
	ctx := context.Background()
	capability, pack := &rulesv1alpha1.Capability{}, &rulesv1alpha1.RulePack{}
	for file, obj := range map[string]client.Object{"rules_v1alpha1_capability.yaml": capability, "rules_v1alpha1_rulepack.yaml": pack} {
		data, err := os.ReadFile(filepath.Join(env.Root, "config", "samples", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		obj.SetNamespace(ns)
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", obj.GetName(), err)
			}
		})
	}
	return capability, pack
}

// checkMetrics scrapes the metrics endpoint with the token of a ServiceAccount bound to
// a role granting GET /metrics — the installation's metrics-reader ClusterRole when it
// has one — and with the token of one that is not: the manager must authenticate both
// through TokenReview and authorize them through SubjectAccessReview. It returns what
// the authorized scrape read.
func checkMetrics(t *testing.T, ns string, objs []*unstructured.Unstructured, addr string) string {
	ctx := context.Background()
	reader := "perm-metrics-reader-" + ns
	if i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "-metrics-reader")
	}); i >= 0 {
		reader = objs[i].GetName()
	} else {
		create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: reader},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}})
	}
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scraper"}})
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stranger"}})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "perm-scraper-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "scraper"}}})

	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The endpoint's certificate is the manager's own or the test's; what is checked
	// here is who may read it, not the certificate.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var scraped string
	for sa, want := range map[string]int{"scraper": http.StatusOK, "stranger": http.StatusForbidden} {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", sa, err)
		}
		testpoll.Eventually(t, 30*time.Second, 200*time.Millisecond, fmt.Sprintf("GET /metrics as %s: %d", sa, want), func() (bool, string) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
			req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
			resp, err := hc.Do(req)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			var body bytes.Buffer
			if _, err := body.ReadFrom(resp.Body); err != nil {
				return false, err.Error()
			}
			if resp.StatusCode == http.StatusOK {
				scraped = body.String()
			}
			return resp.StatusCode == want, resp.Status
		})
	}
	return scraped
}

// create creates obj as the admin and deletes it when the test ends.
func create(t *testing.T, obj client.Object) {
	ctx := context.Background()
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %T %s: %v", obj, obj.GetName(), err)
		}
	})
}

// allowed asks the API server's authorizer whether user may do ra.
func allowed(t *testing.T, user string, ra authorizationv1.ResourceAttributes) bool {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: serviceaccountGroups(user), ResourceAttributes: &ra}}
	if err := env.Client.Create(context.Background(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

func serviceaccountUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// serviceaccountGroups are the groups the API server puts a ServiceAccount's user in.
func serviceaccountGroups(user string) []string {
	ns := strings.Split(user, ":")[2]
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}

// impersonatingKubeconfig writes a kubeconfig that reaches env as the admin but acts as
// user, so the API server authorizes every request against user's permissions.
func impersonatingKubeconfig(t *testing.T, user string) string {
	cfg, err := clientcmd.Load(env.Environment.KubeConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate, auth.ImpersonateGroups = user, serviceaccountGroups(user)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// mountSecret does what the kubelet does for a Secret volume: while the test runs, the
// Secret's keys are files in dir, updated when it changes.
func mountSecret(t *testing.T, key client.ObjectKey, dir string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		var version string
		for ctx.Err() == nil {
			var s corev1.Secret
			if err := env.Client.Get(ctx, key, &s); err == nil && s.ResourceVersion != version {
				for k, v := range s.Data {
					tmp := filepath.Join(dir, "."+k)
					if err := os.WriteFile(tmp, v, 0o600); err != nil {
						t.Errorf("mount Secret %s: %v", key, err)
						return
					}
					if err := os.Rename(tmp, filepath.Join(dir, k)); err != nil {
						t.Errorf("mount Secret %s: %v", key, err)
						return
					}
				}
				version = s.ResourceVersion
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// writeSelfSignedCert writes tls.crt and tls.key for localhost into dir.
func writeSelfSignedCert(t *testing.T, dir, name string) {
	crt, key, err := certutil.GenerateSelfSignedCertKey(name+".localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// buildManager builds cmd/manager into a directory of the test's.
func buildManager(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "manager")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/manager")
	cmd.Dir = env.Root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/manager: %v\n%s", err, out)
	}
	return bin
}

// managerProc is a running manager binary.
type managerProc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

// startManager runs bin with args as a pod of namespace ns would, on kubeconfig; the
// test's end stops it, and a failed test prints its log.
func startManager(t *testing.T, bin string, args []string, kubeconfig, ns string) *managerProc {
	log := filepath.Join(t.TempDir(), "manager.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+ns)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &managerProc{cmd: cmd, log: log, exited: make(chan struct{})}
	go func() { m.err = cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-m.exited
		if t.Failed() {
			data, _ := os.ReadFile(log)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			t.Logf("manager %s, the last lines of its log:\n%s", strings.Join(args, " "), strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	return m
}

// ready reports whether the manager's /readyz answers 200.
func (m *managerProc) ready(probe string) (bool, string) {
	select {
	case <-m.exited:
		return false, fmt.Sprintf("the manager exited: %v", m.err)
	default:
	}
	resp, err := http.Get("http://" + probe + "/readyz?verbose")
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	return resp.StatusCode == http.StatusOK, strings.TrimSpace(body.String())
}

// stop sends SIGTERM, as the kubelet does, and waits for a clean exit.
func (m *managerProc) stop() error {
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-m.exited:
		return m.err
	case <-time.After(30 * time.Second):
		return errors.New("the manager did not exit within 30s")
	}
}

// freeAddr is a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// flagValue is the last value args give flag name, or def.
func flagValue(args []string, name, def string) string {
	v := def
	for _, a := range args {
		if s, ok := strings.CutPrefix(a, name+"="); ok {
			v = s
		}
	}
	return v
}

// find converts the first object of kind among objs.
func find[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) T {
	t.Helper()
	var out T
	for _, o := range objs {
		if o.GetKind() == kind {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("the installation has no %s", kind)
	return out
}

func conditionsOf(o client.Object) []metav1.Condition {
	switch o := o.(type) {
	case *rulesv1alpha1.Capability:
		return o.Status.Conditions
	case *rulesv1alpha1.RulePack:
		return o.Status.Conditions
	}
	return nil
}
