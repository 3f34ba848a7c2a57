package sidecar

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
)

// sessionWorkload is one workload of 1,000 sessions on testRules: a shell call reads
// and writes session state (COUNT_SHELL's counter, SHELL_LIMIT's read of it, the
// activity window DEPLOY_AFTER_FETCH's flow reads); an output with a tenant tier needs
// none (FREE_TIER).
func sessionWorkload(stateful bool) [][]byte {
	occs := make([][]byte, 1000)
	for i := range occs {
		session := fmt.Sprintf("session-%04d", i)
		if stateful {
			occs[i] = []byte(shellCall(session))
		} else {
			occs[i] = []byte(occ("content.output", session, `"facts": {"acme.gateway.tenant_tier": "free"}, "content": "hello"`))
		}
	}
	return occs
}

// BenchmarkSessionStore answers the same occurrences through the handler with sessions
// in memory and in a real redis-server on loopback, one at a time, and reports each
// one's p50 and p99 side by side: the store's cost is the difference between the
// memory and redis rows of one kind. The redis row has the replica's cache of sessions
// (--session-store-cache's default: a commit, or a version check, per occurrence); the
// redis-uncached row has none (a read and a commit).
func BenchmarkSessionStore(b *testing.B) {
	url := redistest.Shared(b).URL
	bd := sealed(b, testCapability, testRules)
	for _, kind := range []string{"stateful", "stateless"} {
		occs := sessionWorkload(kind == "stateful")
		for _, store := range []string{"memory", "redis", "redis-uncached"} {
			b.Run(kind+"/"+store, func(b *testing.B) {
				opt := Options{}
				if store != "memory" {
					ro := redisstore.Options{Prefix: fmt.Sprintf("bench%d:", time.Now().UnixNano()), IdleTTL: time.Minute}
					if store == "redis-uncached" {
						ro.CacheSessions = -1
					}
					opt.SharedSessions = sharedStore(b, url, ro)
				}
				h := serve(b, bd, opt).Handler()
				took := make([]time.Duration, 0, 1<<16)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					start := time.Now()
					serveEvaluate(b, h, occs[i%len(occs)])
					took = append(took, time.Since(start))
				}
				reportPercentiles(b, took)
			})
		}
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportPercentiles(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	at := func(p float64) float64 {
		return float64(took[int(p*float64(len(took)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkSessionReplicas is two replicas on one redis-server answering one workload of
// 1,000 sessions (shell calls: each reads and writes its session) from 16 concurrent
// clients per CPU, each call to a random replica; it reports occurrences a second, and
// the CPU time each occurrence cost the replicas (this process, clients included) and
// Redis, which says what the rate would be on CPUs of their own when, as on a shared
// machine, the measured rate is bounded by the CPU the benchmark gets.
func BenchmarkSessionReplicas(b *testing.B) {
	srv := redistest.Shared(b)
	url := srv.URL
	bd := sealed(b, testCapability, testRules)
	prefix := fmt.Sprintf("replicas%d:", time.Now().UnixNano())
	var hs [2]http.Handler
	for i := range hs {
		hs[i] = serve(b, bd, Options{SharedSessions: sharedStore(b, url, redisstore.Options{Prefix: prefix, IdleTTL: time.Minute})}).Handler()
	}
	occs := sessionWorkload(true)
	var seed atomic.Uint64
	b.SetParallelism(16) // 16 × GOMAXPROCS clients: 32 on two cores
	redisBefore, err := srv.CPU()
	if err != nil {
		b.Fatal(err)
	}
	selfBefore := processCPU(b)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(seed.Add(1), 16))
		for pb.Next() {
			serveEvaluate(b, hs[r.IntN(2)], occs[r.IntN(len(occs))])
		}
	})
	elapsed := time.Since(start)
	redisAfter, err := srv.CPU()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "occurrences/s")
	b.ReportMetric(float64((processCPU(b)-selfBefore).Microseconds())/float64(b.N), "replicas-cpu-µs/op")
	b.ReportMetric(float64((redisAfter-redisBefore).Microseconds())/float64(b.N), "redis-cpu-µs/op")
}
