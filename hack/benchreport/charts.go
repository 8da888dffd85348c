package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"gonum.org/v1/plot/plotter"
)

// namedChart is a chart and the file it is saved as.
type namedChart struct {
	file  string
	chart chart
}

// loadCharts builds the plots from the series files the benchmarks wrote;
// a benchmark that did not run leaves its plots out.
func loadCharts(dir string) ([]namedChart, error) {
	var out []namedChart
	for _, load := range []func(string) ([]namedChart, error){processCharts, dispatcherCharts, scaleCharts} {
		charts, err := load(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, charts...)
	}
	return out, nil
}

// readSeries decodes dir/name into v; false when the file is absent.
func readSeries(dir, name string, v any) (bool, error) {
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return true, nil
}

// xy turns rows into points with x and y taken from each row.
func xy[T any](rows []T, x, y func(T) float64) plotter.XYs {
	out := make(plotter.XYs, len(rows))
	for i, r := range rows {
		out[i].X, out[i].Y = x(r), y(r)
	}
	return out
}
