// Package svgchart renders small charts as inline SVG on the server: a
// horizontal bar chart and a latency distribution (p50 and p95 per row).
// Every bar carries its value as text, and the two parts of a latency row
// differ in shape (a filled bar and an outlined extension), so a chart reads
// the same without colour. Labels are escaped; the SVG holds no script, no
// style attribute and no external reference, so it passes a strict
// Content-Security-Policy when inlined in a page.
package svgchart

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"unicode/utf8"
)

// Geometry of a chart (SVG user units; the SVG scales to its container
// through its viewBox, so a narrow window shrinks it).
const (
	width      = 640
	labelWidth = 170
	valueWidth = 150
	rowHeight  = 26
	barHeight  = 16
	top        = 8
	// MaxLabelRunes is how many characters of a label a row shows; the
	// whole label is in the row's <title> (a tooltip and the accessible
	// name).
	MaxLabelRunes = 22
	// MaxRows bounds the rows one chart draws; further rows are left out
	// and a last line says how many.
	MaxRows = 50
)

// A Bar is one row of a bar chart: Value decides its length, Text is the
// value as the row prints it ("97 %", "1.2 KB").
type Bar struct {
	Label string
	Value float64
	Text  string
}

// A Range is one row of a latency distribution: the bar is solid up to
// P50 and outlined from P50 to P95 (milliseconds).
type Range struct {
	Label string
	P50   int64
	P95   int64
}

// Bars renders a horizontal bar chart titled title. Bars are drawn in the
// order given, each as wide as its value relative to the largest (negative
// and non-finite values draw no bar); no bars draw a chart that says so.
func Bars(title string, bars []Bar) template.HTML {
	maxV := 0.0
	for _, b := range bars {
		if v := clean(b.Value); v > maxV {
			maxV = v
		}
	}
	var c canvas
	c.begin(title, extraLines(len(bars)))
	for i, b := range bars[:min(len(bars), MaxRows)] {
		y := c.rowY(i)
		c.label(y, b.Label, b.Label+": "+b.Text)
		w := scale(clean(b.Value), maxV)
		c.rect(labelWidth, y, w, barHeight, `fill="currentColor" fill-opacity="0.75"`)
		c.text(labelWidth+w+6, y+barHeight-3, "start", b.Text)
	}
	c.note(len(bars))
	return c.end()
}

// Latency renders a latency distribution titled title: per row a solid bar
// to the p50 and an outlined bar from the p50 to the p95, both scaled to
// the largest p95, with "p50 N ms · p95 M ms" as text and a legend naming
// the two shapes.
func Latency(title string, rows []Range) template.HTML {
	var maxV float64
	for _, r := range rows {
		maxV = math.Max(maxV, float64(max(r.P50, r.P95, 0)))
	}
	var c canvas
	c.begin(title, extraLines(len(rows))+1)
	for i, r := range rows[:min(len(rows), MaxRows)] {
		y := c.rowY(i)
		p50, p95 := max(r.P50, 0), max(r.P95, r.P50, 0)
		text := fmt.Sprintf("p50 %s · p95 %s", Millis(p50), Millis(p95))
		c.label(y, r.Label, r.Label+": "+text)
		w50, w95 := scale(float64(p50), maxV), scale(float64(p95), maxV)
		c.rect(labelWidth, y, w50, barHeight, `fill="currentColor" fill-opacity="0.75"`)
		if w95 > w50 {
			c.rect(labelWidth+w50, y+1, w95-w50, barHeight-2, dashed)
		}
		c.text(labelWidth+w95+6, y+barHeight-3, "start", text)
	}
	c.note(len(rows))
	// The legend: the two shapes, named in words.
	y := c.rowY(extraLines(len(rows)))
	c.rect(labelWidth, y+3, 18, 10, `fill="currentColor" fill-opacity="0.75"`)
	c.text(labelWidth+24, y+12, "start", "solid: up to p50")
	c.rect(labelWidth+160, y+3, 18, 10, dashed)
	c.text(labelWidth+184, y+12, "start", "dashed: p50 to p95")
	return c.end()
}

const dashed = `fill="none" stroke="currentColor" stroke-width="1.5" stroke-dasharray="4 2"`

// extraLines is how many lines n rows take: the rows drawn, plus a line
// saying "no data" (n == 0) or how many were left out (n > MaxRows).
func extraLines(n int) int {
	if n == 0 || n > MaxRows {
		return min(n, MaxRows) + 1
	}
	return n
}

// Millis formats a duration in milliseconds for a chart ("850 ms", "1.3 s").
func Millis(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

// Bytes formats a byte count for a chart ("900 B", "1.5 KB", "2.0 MB").
func Bytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}

// Percent formats a rate in [0, 1] as a whole percentage ("97 %").
func Percent(rate float64) string {
	return fmt.Sprintf("%.0f %%", clean(rate)*100)
}

func clean(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// scale maps v in [0, maxV] to a bar width in the bar area.
func scale(v, maxV float64) int {
	if maxV <= 0 {
		return 0
	}
	return int(math.Round(v / maxV * float64(width-labelWidth-valueWidth)))
}

// canvas accumulates one chart's markup; every text it writes is escaped.
type canvas struct{ b strings.Builder }

func (c *canvas) begin(title string, lines int) {
	h := top*2 + (lines+1)*rowHeight
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 %d %d" width="100%%" preserveAspectRatio="xMinYMin meet" font-family="sans-serif" font-size="13">`, width, h)
	fmt.Fprintf(&c.b, `<title>%s</title>`, esc(title))
	c.text(0, top+14, "start", title)
}

func (c *canvas) rowY(i int) int { return top + rowHeight*(i+1) }

func (c *canvas) label(y int, label, full string) {
	fmt.Fprintf(&c.b, `<g><title>%s</title>`, esc(full))
	c.text(labelWidth-8, y+barHeight-3, "end", shorten(label))
	c.b.WriteString(`</g>`)
}

func (c *canvas) rect(x, y, w, h int, attrs string) {
	if w <= 0 {
		return
	}
	fmt.Fprintf(&c.b, `<rect x="%d" y="%d" width="%d" height="%d" %s/>`, x, y, w, h, attrs)
}

func (c *canvas) text(x, y int, anchor, s string) {
	fmt.Fprintf(&c.b, `<text x="%d" y="%d" text-anchor="%s" fill="currentColor">%s</text>`, x, y, anchor, esc(s))
}

// note writes the line after n rows: "no data" or how many rows were left
// out, when there is one.
func (c *canvas) note(n int) {
	switch {
	case n == 0:
		c.text(labelWidth, c.rowY(0)+barHeight-3, "start", "no data")
	case n > MaxRows:
		c.text(labelWidth, c.rowY(MaxRows)+barHeight-3, "start", fmt.Sprintf("%d more not shown", n-MaxRows))
	}
}

func (c *canvas) end() template.HTML {
	c.b.WriteString(`</svg>`)
	// The markup is built here with every text escaped by esc.
	return template.HTML(c.b.String())
}

// esc escapes s for SVG text and attribute values; invalid UTF-8 becomes
// and control characters become U+FFFD so the document stays well-formed.
func esc(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return '\uFFFD' // not allowed in XML text
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return html.EscapeString(s)
}

// shorten cuts s to MaxLabelRunes characters, marking the cut with "…".
func shorten(s string) string {
	if utf8.RuneCountInString(s) <= MaxLabelRunes {
		return s
	}
	r := []rune(s)
	return string(r[:MaxLabelRunes-1]) + "…"
}
