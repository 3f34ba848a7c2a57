package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// alertRun evaluates expressions as alerting rules over a history of samples, the way
// Prometheus' rule manager does: at every interval an instant query with Prometheus' own
// engine; a label set the query returns is pending from the first evaluation of an
// unbroken run of them and fires once it has been pending for the alert's for:; an
// evaluation that does not return it resolves it.
type alertRun struct {
	// For is the for: of each alert, by the key of its expression.
	For map[string]string `json:"for"`
	// Series are the samples, in the notation of Prometheus' PromQL tests ("load"):
	// `name{label="value"} 0 1x30 0x10`, one value per interval from time 0, "_" for none.
	Series []string `json:"series"`
	// Interval is the scrape and evaluation interval.
	Interval string `json:"interval"`
}

// firing is one unbroken stretch of evaluations at which an alert fired for one label
// set, in time since the first sample.
type firing struct {
	Labels string `json:"labels"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// evaluateAlerts runs every alert of run over its series and returns the stretches each
// fired in.
func evaluateAlerts(p parser.Parser, run alertRun, expressions map[string]string) (map[string][]firing, error) {
	interval, err := model.ParseDuration(run.Interval)
	if err != nil || interval <= 0 {
		return nil, fmt.Errorf("alerts: interval %q is no positive duration: %v", run.Interval, err)
	}
	series, steps, err := loadSeries(p, run.Series, time.Duration(interval))
	if err != nil {
		return nil, err
	}
	q := &storage.MockQueryable{MockQuerier: &storage.MockQuerier{SelectMockFunction: series.selectMatching}}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute})
	out := map[string][]firing{}
	for name, forText := range run.For {
		hold, err := model.ParseDuration(forText)
		if err != nil {
			return nil, fmt.Errorf("alert %s: for %q: %w", name, forText, err)
		}
		expr, ok := expressions[name]
		if !ok {
			return nil, fmt.Errorf("alert %s: no expression of that name", name)
		}
		if out[name], err = evaluateAlert(engine, q, expr, time.Duration(hold), time.Duration(interval), steps); err != nil {
			return nil, fmt.Errorf("alert %s: %w", name, err)
		}
	}
	return out, nil
}

// evaluateAlert evaluates one alert at each of steps intervals.
func evaluateAlert(engine *promql.Engine, q storage.Queryable, expr string, hold, interval time.Duration, steps int) ([]firing, error) {
	var out []firing
	activeAt := map[string]time.Duration{} // label set → start of its unbroken run
	open := map[string]int{}               // label set → its stretch in out, while firing
	for i := range steps {
		at := time.Duration(i) * interval
		vec, err := instantQuery(engine, q, expr, at)
		if err != nil {
			return nil, err
		}
		returned := map[string]bool{}
		for _, s := range vec {
			key := s.Metric.String()
			returned[key] = true
			if _, ok := activeAt[key]; !ok {
				activeAt[key] = at
			}
			if at-activeAt[key] < hold {
				continue
			}
			if j, ok := open[key]; ok {
				out[j].To = at.String()
			} else {
				open[key] = len(out)
				out = append(out, firing{Labels: key, From: at.String(), To: at.String()})
			}
		}
		for key := range activeAt {
			if !returned[key] {
				delete(activeAt, key)
				delete(open, key)
			}
		}
	}
	return out, nil
}

func instantQuery(engine *promql.Engine, q storage.Queryable, expr string, at time.Duration) (promql.Vector, error) {
	qry, err := engine.NewInstantQuery(context.Background(), q, nil, expr, time.Unix(0, 0).Add(at))
	if err != nil {
		return nil, err
	}
	defer qry.Close()
	res := qry.Exec(context.Background())
	if res.Err != nil {
		return nil, fmt.Errorf("at %s: %w", at, res.Err)
	}
	return res.Vector()
}

// seriesList is an in-memory storage: the series a run loads.
type seriesList []storage.Series

// loadSeries parses each series description and returns the series and the number of
// intervals the longest covers.
func loadSeries(p parser.Parser, descs []string, interval time.Duration) (seriesList, int, error) {
	var list seriesList
	steps := 0
	for _, d := range descs {
		lset, values, err := p.ParseSeriesDesc(d)
		if err != nil {
			return nil, 0, fmt.Errorf("series %q: %w", d, err)
		}
		var samples chunks.SampleSlice
		for i, v := range values {
			if v.Omitted {
				continue
			}
			if v.Histogram != nil {
				return nil, 0, fmt.Errorf("series %q: histograms are not supported", d)
			}
			samples = append(samples, floatSample{t: (time.Duration(i) * interval).Milliseconds(), f: v.Value})
		}
		list = append(list, storage.NewListSeries(lset, samples))
		steps = max(steps, len(values))
	}
	slices.SortFunc(list, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return list, steps, nil
}

// selectMatching is the storage's Select: the series every matcher matches, sorted.
func (l seriesList) selectMatching(_ bool, _ *storage.SelectHints, matchers ...*labels.Matcher) storage.SeriesSet {
	var out seriesSet
	for _, s := range l {
		if !slices.ContainsFunc(matchers, func(m *labels.Matcher) bool { return !m.Matches(s.Labels().Get(m.Name)) }) {
			out.series = append(out.series, s)
		}
	}
	return &out
}

// seriesSet iterates over selected series.
type seriesSet struct {
	series []storage.Series
	next   int
}

func (s *seriesSet) Next() bool                      { s.next++; return s.next <= len(s.series) }
func (s *seriesSet) At() storage.Series              { return s.series[s.next-1] }
func (*seriesSet) Err() error                        { return nil }
func (*seriesSet) Warnings() annotations.Annotations { return nil }

// floatSample is one float sample of a loaded series.
type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                    { return s.t }
func (floatSample) ST() int64                     { return 0 }
func (s floatSample) F() float64                  { return s.f }
func (floatSample) H() *histogram.Histogram       { return nil }
func (floatSample) FH() *histogram.FloatHistogram { return nil }
func (floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample         { return s }
