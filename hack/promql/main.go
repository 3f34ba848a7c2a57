// Command promql-check parses PromQL expressions with Prometheus' own parser and checks
// that every metric they select is one of a given list. The chart's tests
// (internal/chart) run it on the chart's PrometheusRule with the metrics the manager and
// the engine sidecar export; it lives in a module of its own because the prometheus
// module would raise otel, grpc and x/net in the root module.
//
// Input on stdin, JSON: {"metrics": ["name", ...], "expressions": {"where": "expr", ...}}.
// Output on stdout, JSON: {"where": {"metrics": [...], "error": "..."}, ...}, one entry per
// expression: the metric names it selects and what is wrong with it, if anything. The
// exit status is 1 when any expression does not parse or names a metric not listed.
//
// With "alerts": {"for": {"where": "15m", ...}, "series": [...], "interval": "1m"} it also
// evaluates those expressions as alerting rules over the series given (alerts.go), and
// each one's entry says when it fired: "firing": [{"labels", "from", "to"}, ...].
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type input struct {
	Metrics     []string          `json:"metrics"`
	Expressions map[string]string `json:"expressions"`
	Alerts      *alertRun         `json:"alerts,omitempty"`
}

type verdict struct {
	Metrics []string `json:"metrics"`
	Error   string   `json:"error,omitempty"`
	Firing  []firing `json:"firing,omitempty"`
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintf(os.Stderr, "promql-check: reading the input: %v\n", err)
		os.Exit(2)
	}
	out, ok := check(in)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "promql-check: %v\n", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// check parses every expression and names its metrics.
func check(in input) (map[string]verdict, bool) {
	known := map[string]bool{}
	for _, m := range in.Metrics {
		known[m] = true
	}
	out := map[string]verdict{}
	ok := true
	p := parser.NewParser(parser.Options{})
	for where, src := range in.Expressions {
		v := verdict{Metrics: []string{}}
		expr, err := p.ParseExpr(src)
		if err != nil {
			v.Error = fmt.Sprintf("does not parse: %v", err)
			out[where], ok = v, false
			continue
		}
		var unknown []string
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, isSel := n.(*parser.VectorSelector)
			if !isSel {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if name == "" {
				unknown = append(unknown, "a selector without a metric name: "+vs.String())
				return nil
			}
			if !slices.Contains(v.Metrics, name) {
				v.Metrics = append(v.Metrics, name)
			}
			if !known[name] {
				unknown = append(unknown, name)
			}
			return nil
		})
		slices.Sort(v.Metrics)
		if len(unknown) > 0 {
			v.Error = fmt.Sprintf("names metrics neither the manager nor the sidecar exports: %v", unknown)
			ok = false
		}
		out[where] = v
	}
	if ok && in.Alerts != nil {
		return withFiring(p, *in.Alerts, in.Expressions, out)
	}
	return out, ok
}

// withFiring adds to each alert's verdict when it fired over the run's series; an alert
// that cannot be evaluated gets the error.
func withFiring(p parser.Parser, run alertRun, expressions map[string]string, out map[string]verdict) (map[string]verdict, bool) {
	fired, err := evaluateAlerts(p, run, expressions)
	for where := range run.For {
		v := out[where]
		if err != nil {
			v.Error = err.Error()
		}
		v.Firing = fired[where]
		out[where] = v
	}
	return out, err == nil
}
