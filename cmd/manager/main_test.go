package main

import (
	"strings"
	"testing"
)

// TestWebhookFlags: webhooks are on by default with self-managed certificates, which
// need the namespace of their Secret; external certificates need nothing more.
func TestWebhookFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	for _, c := range []struct {
		name string
		args []string
		err  string
	}{
		{"self-managed without a namespace", nil, "--webhook-namespace"},
		{"self-managed", []string{"--webhook-namespace=oar-system"}, ""},
		{"external", []string{"--webhook-cert-mode=external"}, ""},
		{"an unknown mode", []string{"--webhook-cert-mode=manual"}, "--webhook-cert-mode"},
		{"webhooks off", []string{"--enable-webhooks=false", "--webhook-cert-mode=manual"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := parseFlags(c.args)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("got %v, want an error naming %s", err, c.err)
			case err == nil && o.webhooks.enabled && (o.webhooks.port != 9443 || o.webhooks.certs.CertDir == ""):
				t.Fatalf("unexpected options %+v", o.webhooks)
			}
		})
	}
	t.Setenv("POD_NAMESPACE", "oar-system")
	o, err := parseFlags(nil)
	if err != nil || o.webhooks.certs.Namespace != "oar-system" || !o.webhooks.enabled || o.webhooks.certMode != certSelfManaged {
		t.Fatalf("defaults: %+v %v", o.webhooks, err)
	}
}
