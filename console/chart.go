package console

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// chart is a chart laid out for an inline SVG, drawn by the server: one
// slot per hour or day, with bars stacked by part and lines through the
// slots' middles.
type chart struct {
	Width, Height, Base int
	// Max is the value at the top; Unit follows it on the axis.
	Max   int
	Unit  string
	Label string // what the chart shows, for those who do not see it
	Bars  []bar
	Lines []line
	Dots  []dot
	Ticks []tick
}

type bar struct {
	X, Width int
	Label    string
	Parts    []segment
}

type segment struct {
	X, Width  int
	Y, Height int
	Class     string
	Title     string
}

// line is one unbroken run of a series: a slot without a value breaks it.
type line struct {
	Class  string
	Points string
}

type dot struct {
	X, Y  int
	Class string
	Title string
}

type tick struct {
	X     int
	Label string
}

// part is one stacked part of a bar chart's bars, or one series of a line
// chart: its style class and the name its titles use.
type part struct{ Class, Name string }

// slot is one hour or day of a chart: its axis label, the span its titles
// name, what its values are out of (" of 5 received", or ""), and a value
// per part.
type slot struct {
	Label, Span, Of string
	Values          []int
	// Points are a line chart's values per part; Has says whether the slot
	// has them.
	Points []float64
	Has    bool
}

const (
	chartWidth, chartHeight, chartBase = 960, 200, 180
)

// barChart stacks each slot's values, in parts' order, scaled to the
// largest total; every tickEvery-th slot (and the last) is labelled.
func barChart(label string, parts []part, slots []slot, tickEvery int) chart {
	ch := chart{Width: chartWidth, Height: chartHeight, Base: chartBase, Label: label}
	for _, s := range slots {
		total := 0
		for _, v := range s.Values {
			total += v
		}
		ch.Max = max(ch.Max, total)
	}
	scale := 1.0
	if ch.Max > 0 {
		scale = float64(ch.Base-10) / float64(ch.Max)
	}
	width := ch.Width / max(len(slots), 1)
	for i, s := range slots {
		b := bar{X: i*width + 3, Width: width - 6, Label: s.Label}
		y := ch.Base
		for j, p := range parts {
			n := s.Values[j]
			if n == 0 {
				continue
			}
			height := max(int(float64(n)*scale+0.5), 1)
			y -= height
			b.Parts = append(b.Parts, segment{X: b.X, Width: b.Width, Y: y, Height: height, Class: p.Class,
				Title: fmt.Sprintf("%s: %d %s%s", s.Span, n, p.Name, s.Of)})
		}
		ch.Bars = append(ch.Bars, b)
		if i%tickEvery == 0 || i == len(slots)-1 {
			ch.Ticks = append(ch.Ticks, tick{X: b.X + b.Width/2, Label: b.Label})
		}
	}
	return ch
}

// lineChart draws each part as a line through the slots that have values,
// scaled to the largest value (rounded up), in unit.
func lineChart(label, unit string, parts []part, slots []slot, tickEvery int) chart {
	ch := chart{Width: chartWidth, Height: chartHeight, Base: chartBase, Label: label, Unit: unit}
	top := 0.0
	for _, s := range slots {
		for _, v := range s.Points {
			top = max(top, v)
		}
	}
	ch.Max = int(math.Ceil(top))
	scale := 1.0
	if ch.Max > 0 {
		scale = float64(ch.Base-10) / float64(ch.Max)
	}
	width := ch.Width / max(len(slots), 1)
	for j, p := range parts {
		var run []string
		flush := func() {
			if len(run) > 0 {
				ch.Lines = append(ch.Lines, line{Class: p.Class, Points: strings.Join(run, " ")})
			}
			run = nil
		}
		for i, s := range slots {
			if !s.Has {
				flush()
				continue
			}
			x, y := i*width+width/2, ch.Base-int(s.Points[j]*scale+0.5)
			run = append(run, strconv.Itoa(x)+","+strconv.Itoa(y))
			ch.Dots = append(ch.Dots, dot{X: x, Y: y, Class: p.Class, Title: fmt.Sprintf("%s: %s %s%s", s.Span, p.Name, formatFloat(s.Points[j]), unit)})
		}
		flush()
	}
	for i, s := range slots {
		if i%tickEvery == 0 || i == len(slots)-1 {
			ch.Ticks = append(ch.Ticks, tick{X: i*width + width/2, Label: s.Label})
		}
	}
	return ch
}

// formatFloat writes v with at most one decimal.
func formatFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}
