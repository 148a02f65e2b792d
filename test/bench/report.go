package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

type measurement struct {
	Suite    string  `json:"suite"`
	Workload string  `json:"workload"`
	Target   string  `json:"target"`
	Run      int     `json:"run"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"` // s, MiB, ms (CPU time), req (FUSE requests) or paths
	// Ops splits FUSE requests by operation.
	Ops map[string]uint64 `json:"ops,omitempty"`
}

type results struct {
	Machine      string        `json:"machine"`
	Quick        bool          `json:"quick"`
	Runs         int           `json:"runs"`
	Started      time.Time     `json:"started"`
	Measurements []measurement `json:"measurements"`
	Medians      []median      `json:"medians"`
	// StorageRuns is how many turns of each storage workload were
	// measured (at least 5).
	StorageRuns int `json:"storage_runs,omitempty"`
	// Curve is the journal's size after each turn of churn (storage).
	Curve []curvePoint `json:"churn_curve,omitempty"`
}

type median struct {
	Suite    string  `json:"suite"`
	Workload string  `json:"workload"`
	Target   string  `json:"target"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	// Ratio to native in the same run, for the fs suite.
	Ratio float64 `json:"ratio_to_native,omitempty"`
}

func (r *results) add(suite, workload, target string, run int, v float64, unit string) {
	r.Measurements = append(r.Measurements, measurement{Suite: suite, Workload: workload, Target: target, Run: run, Value: v, Unit: unit})
}

// table collects the medians of a suite: its workloads and targets in
// the order they were first measured.
func (r *results) table(suite string) (workloads, targets []string, med map[[2]string]median) {
	vals := map[[2]string][]float64{}
	units := map[[2]string]string{}
	for _, m := range r.Measurements {
		if m.Suite != suite {
			continue
		}
		k := [2]string{m.Workload, m.Target}
		if vals[k] == nil {
			if !contains(workloads, m.Workload) {
				workloads = append(workloads, m.Workload)
			}
			if !contains(targets, m.Target) {
				targets = append(targets, m.Target)
			}
		}
		vals[k] = append(vals[k], m.Value)
		units[k] = m.Unit
	}
	med = map[[2]string]median{}
	for k, vs := range vals {
		sort.Float64s(vs)
		med[k] = median{Suite: suite, Workload: k[0], Target: k[1], Value: vs[len(vs)/2], Unit: units[k]}
	}
	for _, w := range workloads {
		base, ok := med[[2]string{w, "native"}]
		for _, t := range targets {
			k := [2]string{w, t}
			m, have := med[k]
			if have && ok && base.Value > 0 && m.Unit == "s" {
				m.Ratio = m.Value / base.Value
				med[k] = m
			}
		}
	}
	return workloads, targets, med
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (r *results) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s; median of %d runs", r.Machine, r.Runs)
	if r.Quick {
		fmt.Fprint(w, " (-quick)")
	}
	fmt.Fprintln(w)
	for _, suite := range []string{suiteFS, suiteTurns, suiteStorage, suiteMemory} {
		workloads, targets, med := r.table(suite)
		if len(workloads) == 0 {
			continue
		}
		for _, wl := range workloads {
			for _, t := range targets {
				if m, ok := med[[2]string{wl, t}]; ok {
					r.Medians = append(r.Medians, m)
				}
			}
		}
		fmt.Fprintln(w)
		if suite == suiteStorage {
			fmt.Fprintf(w, "journal: median of %d turns of each workload, and of %d rollbacks of the last\n\n", r.StorageRuns, r.StorageRuns)
		}
		if suite == suiteMemory {
			fmt.Fprintf(w, "daemon memory: peak resident set of each phase alone (bound: %d MiB)\n\n", memBound)
		}
		fmt.Fprintf(w, "| %s |", map[string]string{suiteFS: "workload", suiteTurns: "turns", suiteStorage: "journal", suiteMemory: "workload, phase"}[suite])
		for _, t := range targets {
			fmt.Fprintf(w, " %s |", t)
		}
		fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(targets)))
		for _, wl := range workloads {
			fmt.Fprintf(w, "| %s |", wl)
			for _, t := range targets {
				m, ok := med[[2]string{wl, t}]
				switch {
				case !ok:
					fmt.Fprint(w, " – |")
				case m.Unit == "MiB":
					fmt.Fprintf(w, " %.0f MiB |", m.Value)
				case m.Unit == "KiB":
					fmt.Fprintf(w, " %s |", kib(m.Value))
				case m.Unit == "paths":
					fmt.Fprintf(w, " %.0f |", m.Value)
				case m.Ratio != 0 && t != "native":
					fmt.Fprintf(w, " %s (%.2f×) |", seconds(m.Value), m.Ratio)
				default:
					fmt.Fprintf(w, " %s |", seconds(m.Value))
				}
			}
			fmt.Fprintln(w)
		}
		if suite == suiteFS {
			r.printUsage(w)
		}
	}
}

// kib formats a number of KiB.
func kib(v float64) string {
	if v >= 1024 {
		return fmt.Sprintf("%.1f MiB", v/1024)
	}
	return fmt.Sprintf("%.1f KiB", v)
}

// printCurve prints the journal's size after each turn of churn.
func (r *results) printCurve(w io.Writer) {
	if len(r.Curve) == 0 {
		return
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	fmt.Fprintf(w, "\n| churn turn | journal on disk | content the window needs | what the window's turns added | journal / content |\n|---|---|---|---|---|\n")
	var worst curvePoint
	for i, p := range r.Curve {
		if p.Content > 0 && (worst.Content == 0 || p.Journal*worst.Content > worst.Journal*p.Content) {
			worst = p
		}
		if i < 12 || (i+1)%10 == 0 || i == len(r.Curve)-1 {
			fmt.Fprintf(w, "| %d | %.1f MiB | %.1f MiB | %.1f MiB | %.2f |\n", p.Turn, mib(p.Journal), mib(p.Content), mib(p.Window), float64(p.Journal)/float64(max(p.Content, 1)))
		}
	}
	fmt.Fprintf(w, "\nlargest journal / content: %.2f at turn %d (%.1f MiB over the content)\n", float64(worst.Journal)/float64(max(worst.Content, 1)), worst.Turn, mib(worst.Journal-worst.Content))
}

// printUsage prints what each workload cost the daemons: CPU time, and
// for cowfs the FUSE requests it served, CPU time per request and the
// most frequent operations (from the run with the median count).
func (r *results) printUsage(w io.Writer) {
	workloads, cpuTargets, cpu := r.table(suiteCPU)
	_, reqTargets, req := r.table(suiteRequests)
	if len(workloads) == 0 {
		return
	}
	for _, m := range cpu {
		r.Medians = append(r.Medians, m)
	}
	for _, m := range req {
		r.Medians = append(r.Medians, m)
	}
	fmt.Fprint(w, "\n| daemon CPU, FUSE requests |")
	for _, t := range cpuTargets {
		fmt.Fprintf(w, " %s CPU |", t)
	}
	for _, t := range reqTargets {
		fmt.Fprintf(w, " %s requests | %s CPU µs/request | %s operations |", t, t, t)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(cpuTargets)+3*len(reqTargets)))
	for _, wl := range workloads {
		fmt.Fprintf(w, "| %s |", wl)
		for _, t := range cpuTargets {
			if m, ok := cpu[[2]string{wl, t}]; ok {
				fmt.Fprintf(w, " %.0f ms |", m.Value)
			} else {
				fmt.Fprint(w, " – |")
			}
		}
		for _, t := range reqTargets {
			m, ok := req[[2]string{wl, t}]
			if !ok {
				fmt.Fprint(w, " – | – | – |")
				continue
			}
			fmt.Fprintf(w, " %.0f |", m.Value)
			if c, ok := cpu[[2]string{wl, t}]; ok && m.Value > 0 {
				fmt.Fprintf(w, " %.1f |", c.Value*1000/m.Value)
			} else {
				fmt.Fprint(w, " – |")
			}
			fmt.Fprintf(w, " %s |", topOps(r.opsOf(suiteRequests, wl, t, m.Value), 4))
		}
		fmt.Fprintln(w)
	}
}

// opsOf returns the operations of a measurement with value v.
func (r *results) opsOf(suite, workload, target string, v float64) map[string]uint64 {
	for _, m := range r.Measurements {
		if m.Suite == suite && m.Workload == workload && m.Target == target && m.Value == v {
			return m.Ops
		}
	}
	return nil
}

// topOps names the n most frequent operations, with their counts.
func topOps(ops map[string]uint64, n int) string {
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Slice(names, func(i, j int) bool {
		if ops[names[i]] != ops[names[j]] {
			return ops[names[i]] > ops[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for i, op := range names {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", op, ops[op]))
	}
	return strings.Join(parts, ", ")
}

func seconds(v float64) string {
	switch {
	case v < 0.01:
		return fmt.Sprintf("%.2f ms", v*1000)
	case v < 1:
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.2f s", v)
}
