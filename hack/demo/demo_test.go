package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/oar-operator/oar-operator/internal/testenv"
)

// TestMakeRun runs `make run` the way a newcomer does, from the repository root: it
// waits until the tour has printed its decisions and the operator is left running,
// presses Ctrl-C (SIGINT to the whole process group, as a terminal does), and checks that
// a newcomer saw each step and that everything stopped.
func TestMakeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and builds the demo")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "run")
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("make run: %v", err)
	}
	// Whatever happens, nothing of the process group outlives the test.
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	out := &syncBuffer{}
	waiting := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		r := bufio.NewReader(stdout)
		signalled := false
		for {
			line, err := r.ReadString('\n')
			out.Write([]byte(line))
			if !signalled && strings.HasPrefix(line, "Press Ctrl-C to stop.") {
				signalled = true
				close(waiting)
			}
			if err != nil {
				if err != io.EOF {
					t.Errorf("reading make run's output: %v", err)
				}
				return
			}
		}
	}()

	select {
	case <-waiting:
	case <-copied:
		t.Fatalf("make run ended before the tour finished:\n%s", out.String())
	case <-time.After(8 * time.Minute):
		t.Fatalf("make run did not finish its tour in 8 minutes:\n%s", out.String())
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatalf("interrupt make run: %v", err)
	}
	exited := make(chan error, 1)
	go func() { <-copied; exited <- cmd.Wait() }()
	select {
	case <-exited:
		// make exits with the interrupt's status (130), as on any Ctrl-C; what matters
		// is that the demo stopped the control plane on its way out, checked below.
	case <-time.After(time.Minute):
		t.Fatalf("make run did not stop within a minute of Ctrl-C:\n%s", out.String())
	}
	// The manager, oar-engine, etcd and kube-apiserver ran in make's process group:
	// none of them may outlive the demo.
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(-cmd.Process.Pid, 0) == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("processes of make run are still running after it exited:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	for _, want := range []string{
		"Starting a local control plane",
		"Starting the manager, bin/manager",
		"capability.rules.oar.dev/acme-gateway created",
		"rulepack.rules.oar.dev/acme-baseline created",
		"operatorconfig.rules.oar.dev/",
		`The RulePack "acme-broken" is invalid: spec.rules[0].when: Invalid value: "pth_outside_scope(\"read\")": `,
		`[OAR-FACT-3] unknown identifier "pth_outside_scope" at offset 0; did you mean "path_outside_scope"?`,
		"rulepack        acme-baseline  True",
		"rules.oar.dev/capability=acme-gateway",
		"name: oar-engine",
		"value: http://127.0.0.1:8181",
		"name: acme-gateway-oar-bundle",
		"the bundle the oar-bundle volume mounts",
		"decision: none (no rule fired",
		`oar-engine --bundle-dir`,
		`--probe-address ""`,
		"decision: block (rule acme.security/READ_OUTSIDE_SCOPE)",
		`content: "Write to [REDACTED] or [REDACTED]."`,
		"oar-engine serves at http://127.0.0.1:",
		"The operator and oar-engine keep running",
		"export KUBECONFIG=",
		"Stopping the control plane",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("make run does not show %q:\n%s", want, out.String())
		}
	}
}

// syncBuffer is written by the reader goroutine and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestInvalidMessage: a refusal reads as kubectl prints it (k8s.io/kubectl's checkErr),
// the kind and name, then one cause on the same line or several as a list, each once.
func TestInvalidMessage(t *testing.T) {
	pack := schema.GroupKind{Group: "rules.oar.dev", Kind: "RulePack"}
	when := field.Invalid(field.NewPath("spec", "rules").Index(0).Child("when"), "pth()", "[OAR-FACT-3] unknown identifier")
	id := field.Invalid(field.NewPath("spec", "rules").Index(1).Child("id"), "x", "[OAR-DOC-9] defined twice")
	for _, c := range []struct {
		errs field.ErrorList
		want string
	}{
		{field.ErrorList{when}, `The RulePack "acme-broken" is invalid: spec.rules[0].when: Invalid value: "pth()": [OAR-FACT-3] unknown identifier`},
		{field.ErrorList{when, id, when}, "The RulePack \"acme-broken\" is invalid: \n" +
			`* spec.rules[0].when: Invalid value: "pth()": [OAR-FACT-3] unknown identifier` + "\n" +
			`* spec.rules[1].id: Invalid value: "x": [OAR-DOC-9] defined twice`},
	} {
		if got := invalidMessage(apierrors.NewInvalid(pack, "acme-broken", c.errs).Status()); got != c.want {
			t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
		}
	}
}
