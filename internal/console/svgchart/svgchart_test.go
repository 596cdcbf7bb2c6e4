package svgchart

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// parse decodes svg as XML and returns its rects (as "x,y,w,h" attrs) and
// texts, failing on markup that is not well-formed.
func parse(t *testing.T, svg string) (rects []map[string]string, texts []string, titles []string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var stack []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			switch tok.Name.Local {
			case "rect":
				m := map[string]string{}
				for _, a := range tok.Attr {
					m[a.Name.Local] = a.Value
				}
				rects = append(rects, m)
			case "script", "foreignObject", "style", "image", "a", "use":
				t.Fatalf("chart holds a <%s> element:\n%s", tok.Name.Local, svg)
			}
			for _, a := range tok.Attr {
				if a.Name.Local == "style" || strings.HasPrefix(a.Name.Local, "on") || a.Name.Local == "href" {
					t.Fatalf("chart holds attribute %s:\n%s", a.Name.Local, svg)
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			switch stack[len(stack)-1] {
			case "text":
				texts = append(texts, string(tok))
			case "title":
				titles = append(titles, string(tok))
			}
		}
	}
	return rects, texts, titles
}

func TestBarsEscapeLabelsAndPrintValues(t *testing.T) {
	evil := `<script>document.title="pwned"</script>&"'`
	svg := string(Bars("calls per tool", []Bar{
		{Label: evil, Value: 10, Text: "10 calls"},
		{Label: "read_file", Value: 5, Text: "5 <b>calls</b>"},
	}))
	if strings.Contains(svg, "<script") || strings.Contains(svg, "<b>") {
		t.Fatalf("raw markup from a label or value reached the SVG:\n%s", svg)
	}
	if !strings.Contains(svg, "&lt;script&gt;") {
		t.Fatalf("label not escaped as text:\n%s", svg)
	}
	rects, texts, titles := parse(t, svg)
	// The decoded texts are the labels and values exactly (shortened label).
	want := []string{"calls per tool", shorten(evil), "10 calls", "read_file", "5 <b>calls</b>"}
	if fmt.Sprint(texts) != fmt.Sprint(want) {
		t.Fatalf("texts = %q, want %q", texts, want)
	}
	// The full label is kept in the row's title.
	if fmt.Sprint(titles) != fmt.Sprint([]string{"calls per tool", evil + ": 10 calls", "read_file: 5 <b>calls</b>"}) {
		t.Fatalf("titles = %q", titles)
	}
	// Bars are proportional: the largest fills the bar area, half is half.
	if len(rects) != 2 || rects[0]["width"] != fmt.Sprint(width-labelWidth-valueWidth) || rects[1]["width"] != fmt.Sprint((width-labelWidth-valueWidth)/2) {
		t.Fatalf("rects = %v", rects)
	}
}

func TestBarsEdgeValues(t *testing.T) {
	svg := string(Bars("t", []Bar{
		{Label: "nan", Value: math.NaN(), Text: "?"},
		{Label: "neg", Value: -3, Text: "-3"},
		{Label: "inf", Value: math.Inf(1), Text: "inf"},
		{Label: "bad\x00utf8\xff", Value: 0, Text: "0"},
	}))
	rects, texts, _ := parse(t, svg)
	if len(rects) != 0 {
		t.Fatalf("non-positive or non-finite values drew bars: %v", rects)
	}
	if texts[7] != "bad\uFFFDutf8\uFFFD" {
		t.Fatalf("control byte or invalid UTF-8 not replaced: %q", texts[7])
	}

	_, texts, _ = parse(t, string(Bars("empty", nil)))
	if fmt.Sprint(texts) != "[empty no data]" {
		t.Fatalf("empty chart texts = %q", texts)
	}

	many := make([]Bar, MaxRows+7)
	for i := range many {
		many[i] = Bar{Label: fmt.Sprint("tool", i), Value: float64(i + 1), Text: fmt.Sprint(i + 1)}
	}
	rects, texts, _ = parse(t, string(Bars("many", many)))
	if len(rects) != MaxRows || texts[len(texts)-1] != "7 more not shown" {
		t.Fatalf("rows beyond MaxRows: %d rects, last text %q", len(rects), texts[len(texts)-1])
	}
}

func TestLatencyShapesAndLegend(t *testing.T) {
	svg := string(Latency("latency", []Range{
		{Label: "run_command", P50: 100, P95: 400},
		{Label: "read_file", P50: 20, P95: 20},
	}))
	rects, texts, _ := parse(t, svg)
	area := width - labelWidth - valueWidth
	// run_command: solid to p50 (a quarter), dashed from there to p95 (the whole area).
	if rects[0]["width"] != fmt.Sprint(area/4) || rects[0]["fill"] != "currentColor" {
		t.Fatalf("p50 bar = %v", rects[0])
	}
	if rects[1]["width"] != fmt.Sprint(area-area/4) || rects[1]["fill"] != "none" || rects[1]["stroke-dasharray"] == "" {
		t.Fatalf("p95 extension = %v", rects[1])
	}
	// read_file: p50 == p95 draws only the solid bar; then the legend's two shapes.
	if len(rects) != 5 || rects[3]["fill"] != "currentColor" || rects[4]["fill"] != "none" {
		t.Fatalf("rects = %v", rects)
	}
	want := []string{"latency", "run_command", "p50 100 ms · p95 400 ms", "read_file", "p50 20 ms · p95 20 ms", "solid: up to p50", "dashed: p50 to p95"}
	if fmt.Sprint(texts) != fmt.Sprint(want) {
		t.Fatalf("texts = %q, want %q", texts, want)
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Millis(850), "850 ms"}, {Millis(1250), "1.2 s"}, {Bytes(900), "900 B"}, {Bytes(1536), "1.5 KB"},
		{Bytes(3 << 20), "3.0 MB"}, {Percent(0.974), "97 %"}, {Percent(math.NaN()), "0 %"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
