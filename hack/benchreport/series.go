package main

// The series files the benchmarks write when BENCH_OUT is set; their
// shapes are documented at the benchmarks that write them.

// concurrencyRow is one closed-loop concurrency of
// BenchmarkDispatcherConcurrency (dispatcher-concurrency.json).
type concurrencyRow struct {
	Concurrency float64 `json:"concurrency"`
	DirectP50Ms float64 `json:"directP50Ms"`
	DirectP99Ms float64 `json:"directP99Ms"`
	HTTPP50Ms   float64 `json:"httpP50Ms"`
	HTTPP99Ms   float64 `json:"httpP99Ms"`
	AddedP50Ms  float64 `json:"addedP50Ms"`
	AddedP99Ms  float64 `json:"addedP99Ms"`
	TurnsPerSec float64 `json:"turnsPerSec"`
}

type concurrencySeries struct {
	// ClosedLoop are the levels on the zero-latency app-server double.
	ClosedLoop []concurrencyRow `json:"double"`
}

func dispatcherCharts(dir string) ([]namedChart, error) {
	var s concurrencySeries
	if ok, err := readSeries(dir, "dispatcher-concurrency.json", &s); !ok || err != nil {
		return nil, err
	}
	rows := s.ClosedLoop
	c := func(r concurrencyRow) float64 { return r.Concurrency }
	return []namedChart{
		{file: "dispatcher-latency.png", chart: chart{
			Title: "Turn latency vs. concurrent sessions (zero-latency app-server double, closed loop)",
			X:     "concurrent sessions", Y: "ms to the result", LogX: true,
			Series: []series{
				{Label: "direct engine p50", Points: xy(rows, c, func(r concurrencyRow) float64 { return r.DirectP50Ms })},
				{Label: "direct engine p99", Points: xy(rows, c, func(r concurrencyRow) float64 { return r.DirectP99Ms }), Dashed: true},
				{Label: "HTTPS + SSE + authn/z p50", Points: xy(rows, c, func(r concurrencyRow) float64 { return r.HTTPP50Ms })},
				{Label: "HTTPS + SSE + authn/z p99", Points: xy(rows, c, func(r concurrencyRow) float64 { return r.HTTPP99Ms }), Dashed: true},
			},
		}},
		{file: "dispatcher-added.png", chart: chart{
			Title: "Latency the dispatcher's API adds (HTTP − direct percentiles, unpaired turns)",
			X:     "concurrent sessions", Y: "ms added", LogX: true,
			Series: []series{
				{Label: "added p50", Points: xy(rows, c, func(r concurrencyRow) float64 { return r.AddedP50Ms })},
				{Label: "added p99", Points: xy(rows, c, func(r concurrencyRow) float64 { return r.AddedP99Ms }), Dashed: true},
			},
		}},
	}, nil
}

// processLevel is one closed loop of BenchmarkDispatcherProcess
// (dispatcher-process.json): its concurrency or its cluster's size, and the
// CPU per turn of the dispatcher's process and of the API server.
type processLevel struct {
	Concurrency  float64 `json:"concurrency"`
	Harnesses    float64 `json:"harnesses"`
	DispatcherMs float64 `json:"dispatcherCpuMsPerTurn"`
	Others       struct {
		APIServerMs float64 `json:"kubeAPIServerMs"`
	} `json:"othersCpuMsPerTurn"`
}

type processSeries struct {
	Levels []processLevel `json:"levels"`
	Size   []processLevel `json:"size"`
}

func processCharts(dir string) ([]namedChart, error) {
	var s processSeries
	if ok, err := readSeries(dir, "dispatcher-process.json", &s); !ok || err != nil {
		return nil, err
	}
	dispatcher := func(r processLevel) float64 { return r.DispatcherMs }
	apiServer := func(r processLevel) float64 { return r.Others.APIServerMs }
	c := func(r processLevel) float64 { return r.Concurrency }
	h := func(r processLevel) float64 { return r.Harnesses }
	return []namedChart{
		{file: "dispatcher-cpu-concurrency.png", chart: chart{
			Title: "CPU per turn vs. concurrent sessions (dispatcher process, double)",
			X:     "concurrent sessions", Y: "CPU ms per turn", LogX: true,
			Series: []series{
				{Label: "dispatcher", Points: xy(s.Levels, c, dispatcher)},
				{Label: "kube-apiserver", Points: xy(s.Levels, c, apiServer)},
			},
		}},
		{file: "dispatcher-cpu-size.png", chart: chart{
			Title: "CPU per turn vs. harnesses and policies in the cluster (64 and 10 concern the session)",
			X:     "AgentHarnesses in the cluster", Y: "CPU ms per turn", LogX: true,
			Series: []series{
				{Label: "dispatcher", Points: xy(s.Size, h, dispatcher)},
				{Label: "kube-apiserver", Points: xy(s.Size, h, apiServer)},
			},
		}},
	}, nil
}

// scaleRow is one size of BenchmarkOperatorScale (operator-scale.json).
type scaleRow struct {
	Sessions         float64 `json:"sessions"`
	ReadySeconds     float64 `json:"readySeconds"`
	Change10Seconds  float64 `json:"change10Seconds"`
	Change100Seconds float64 `json:"change100Seconds"`
	Floor10Seconds   float64 `json:"floor10Seconds"`
	Floor100Seconds  float64 `json:"floor100Seconds"`
	ManagerRSSMiB    float64 `json:"managerRSSMiB"`
	DispatcherRSSMiB float64 `json:"dispatcherRSSMiB"`
}

func scaleCharts(dir string) ([]namedChart, error) {
	var rows []scaleRow
	if ok, err := readSeries(dir, "operator-scale.json", &rows); !ok || err != nil {
		return nil, err
	}
	n := func(r scaleRow) float64 { return r.Sessions }
	return []namedChart{
		{file: "policy-fanout.png", chart: chart{
			Title: "A policy change reaching every affected session's status",
			X:     "AgentSessions", Y: "seconds", LogX: true,
			Series: []series{
				{Label: "100 % affected", Points: xy(rows, n, func(r scaleRow) float64 { return r.Change100Seconds })},
				{Label: "API-server floor, 100 %", Points: xy(rows, n, func(r scaleRow) float64 { return r.Floor100Seconds }), Dashed: true},
				{Label: "10 % affected", Points: xy(rows, n, func(r scaleRow) float64 { return r.Change10Seconds })},
				{Label: "API-server floor, 10 %", Points: xy(rows, n, func(r scaleRow) float64 { return r.Floor10Seconds }), Dashed: true},
			},
		}},
		{file: "operator-rss.png", chart: chart{
			Title: "Resident memory vs. AgentSessions",
			X:     "AgentSessions", Y: "MiB", LogX: true,
			Series: []series{
				{Label: "manager", Points: xy(rows, n, func(r scaleRow) float64 { return r.ManagerRSSMiB })},
				{Label: "dispatcher", Points: xy(rows, n, func(r scaleRow) float64 { return r.DispatcherRSSMiB })},
			},
		}},
	}, nil
}
