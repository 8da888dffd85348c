package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one line of a plot.
type series struct {
	Label  string
	Points plotter.XYs
	// Dashed draws p99-like lines apart from their p50.
	Dashed bool
}

// chart is a line plot with its axes.
type chart struct {
	Title, X, Y string
	// LogX spreads concurrency 1…200 or sessions 1,000…10,000.
	LogX   bool
	Series []series
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// save draws c as a PNG at path.
func (c chart) save(path string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.X
	p.Y.Label.Text = c.Y
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	// A dashed series (a p99) takes the colour of the solid one before it.
	colour, next := palette[0], 0
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(s.Points)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", c.Title, s.Label, err)
		}
		if !s.Dashed {
			colour, next = palette[next%len(palette)], next+1
		}
		line.Color, points.Color = colour, colour
		points.Shape = draw.CircleGlyph{}
		if s.Dashed {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			points.Shape = draw.TriangleGlyph{}
		}
		p.Add(line, points)
		p.Legend.Add(s.Label, line, points)
	}
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}
