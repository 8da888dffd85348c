package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// section is one benchmark command's output, as hack/bench.sh saved it:
// <name>.txt holds `go test -bench` output after three header lines
// ("# command: …", "# started: …", "# seconds: …").
type section struct {
	Name    string
	Command string
	Started string
	Seconds float64
	// CPU is the `cpu:` line go test prints.
	CPU     string
	Results []result
	// Failed is set when the command did not end in ok/PASS.
	Failed bool
}

// result is one benchmark line: BenchmarkX/sub-2  N  v unit  v unit …
type result struct {
	Name    string // without the -GOMAXPROCS suffix
	Metrics []metric
}

type metric struct {
	Value float64
	Unit  string
}

// value returns the result's metric of unit, and whether it has one.
func (r result) value(unit string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// readSections reads every <name>.txt of dir, in name order.
func readSections(dir string) ([]section, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []section
	for _, f := range files {
		s, err := readSection(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func readSection(path string) (section, error) {
	f, err := os.Open(path)
	if err != nil {
		return section{}, err
	}
	defer func() { _ = f.Close() }()
	s := section{Name: strings.TrimSuffix(filepath.Base(path), ".txt"), Failed: true}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	// pending is a benchmark's name whose figures did not follow on its
	// line: something the benchmark's process wrote to stderr (a library's
	// warning) came between, and `go test` prints the figures on a line of
	// their own once the benchmark ends.
	pending := ""
	for sc.Scan() {
		line := sc.Text()
		if pending != "" && strings.HasPrefix(line, " ") {
			if r, ok := parseResult(pending + " " + strings.TrimSpace(line)); ok {
				s.Results = append(s.Results, r)
				pending = ""
				continue
			}
		}
		switch {
		case strings.HasPrefix(line, "# command: "):
			s.Command = strings.TrimPrefix(line, "# command: ")
		case strings.HasPrefix(line, "# started: "):
			s.Started = strings.TrimPrefix(line, "# started: ")
		case strings.HasPrefix(line, "# seconds: "):
			s.Seconds, _ = strconv.ParseFloat(strings.TrimPrefix(line, "# seconds: "), 64)
		case strings.HasPrefix(line, "cpu: ") && s.CPU == "":
			s.CPU = strings.TrimSpace(strings.TrimPrefix(line, "cpu: "))
		case line == "PASS" || strings.HasPrefix(line, "ok "):
			s.Failed = false
		case strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "--- FAIL"):
			s.Failed = true
		case strings.HasPrefix(line, "Benchmark"):
			if r, ok := parseResult(line); ok {
				s.Results = append(s.Results, r)
			} else if f := strings.Fields(line); procsSuffix.MatchString(f[0]) {
				pending = f[0]
			}
		}
	}
	return s, sc.Err()
}

// parseResult reads a benchmark result line; other lines starting with
// "Benchmark" (a b.Log's) are not results.
func parseResult(line string) (result, bool) {
	fields := strings.Fields(line)
	if len(fields) < 4 || len(fields)%2 != 0 {
		return result{}, false
	}
	if _, err := strconv.Atoi(fields[1]); err != nil {
		return result{}, false
	}
	r := result{Name: procsSuffix.ReplaceAllString(fields[0], "")}
	for i := 2; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return result{}, false
		}
		r.Metrics = append(r.Metrics, metric{Value: v, Unit: fields[i+1]})
	}
	return r, true
}

// find returns the result named name in any section: the figures of every
// line of that name (a benchmark's `go test` line and its instruction count
// from hack/bench-instructions.sh), the first line's where a unit repeats.
func find(sections []section, name string) (result, bool) {
	out, found := result{Name: name}, false
	for _, s := range sections {
		for _, r := range s.Results {
			if r.Name != name {
				continue
			}
			found = true
			for _, m := range r.Metrics {
				if _, ok := out.value(m.Unit); !ok {
					out.Metrics = append(out.Metrics, m)
				}
			}
		}
	}
	return out, found
}
