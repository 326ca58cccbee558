package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/floe-lake/floe/cleanroom"
)

// TestNoiseMatchesMechanism: 40,000 draws of each mechanism have mean 0
// within 5 standard errors and variance within 5% of the mechanism's
// (Laplace 2b² with b = Δ/ε; Gaussian σ² with σ = Δ·sqrt(2·ln(1.25/δ))/ε),
// and two executions' sources differ (seeded from crypto/rand).
func TestNoiseMatchesMechanism(t *testing.T) {
	const n = 40000
	for _, tc := range []struct {
		p    cleanroom.Privacy
		want float64
	}{
		{cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 0.5}, 2 * 4 * 4},
		{cleanroom.Privacy{Mechanism: cleanroom.Gaussian, Epsilon: 0.5, Delta: 1e-5}, math.Pow(2*math.Sqrt(2*math.Log(1.25/1e-5))/0.5, 2)},
	} {
		plan := &dpPlan{privacy: tc.p, values: 1, bound: 1}
		nz := newNoise(plan)
		var sum, sq float64
		for range n {
			x := nz.draw(2)
			sum += x
			sq += x * x
		}
		mean := sum / n
		v := sq/n - mean*mean
		if math.Abs(mean) > 5*math.Sqrt(tc.want/n) || math.Abs(v/tc.want-1) > 0.05 {
			t.Errorf("%s: mean %.3f, variance %.2f, want 0 and %.2f", tc.p.Mechanism, mean, v, tc.want)
		}
		if a, b := newNoise(plan).draw(2), newNoise(plan).draw(2); a == b {
			t.Errorf("%s: two executions drew the same noise %v", tc.p.Mechanism, a)
		}
	}
}

// TestRoomDPRewrite: under differential privacy AVG becomes SUM with a
// hidden COUNT, the threshold test becomes hidden identifier counts, and
// the sensitivities follow the row bounds and ranges; SUM of a column
// without a range is refused.
func TestRoomDPRewrite(t *testing.T) {
	d := newTreeDB(t)
	room := overlapRoom()
	room.Collaboration.Privacy = &cleanroom.Privacy{Mechanism: cleanroom.Laplace, Epsilon: 1}
	room.Collaboration.Tables[1].Rule.MaxContributions = 3
	room.Collaboration.Tables[1].Rule.Ranges = map[string]cleanroom.Range{"spend": {Lo: -5, Hi: 2}}
	stmt := d.parse(t, "SELECT e.campaign, count(*), avg(e.spend) FROM customers c JOIN exposures e ON c.email = e.email GROUP BY e.campaign ORDER BY e.campaign")
	c, err := checkRoom(stmt, room)
	if err != nil {
		t.Fatal(err)
	}
	p := c.dp
	if p.bound != 3 || p.values != 5 || p.hidden != 3 || len(p.thresholds) != 2 || p.thresholds[1].min != 5 {
		t.Fatalf("plan %+v", p)
	}
	if p.outs[1] != (dpOut{kind: dpCount, delta: 3}) || p.outs[2] != (dpOut{kind: dpAvg, delta: 15, count: 5}) {
		t.Fatalf("outputs %+v", p.outs)
	}
	q := d.render(t, stmt)
	for _, want := range []string{"sum(e.spend) AS avg", "count(DISTINCT c.customer_id) AS __floe_threshold_ids_0", "count(e.spend) AS __floe_threshold_n_5"} {
		if !strings.Contains(q, want) {
			t.Errorf("rewritten query %s lacks %s", q, want)
		}
	}
	if _, err := checkRoom(d.parse(t, "SELECT sum(c.ltv) FROM customers c"), room); err == nil || !strings.Contains(err.Error(), "declares no range") {
		t.Fatalf("sum without a range: %v", err)
	}
	view := projectRoom("SELECT * FROM t", &room.Collaboration.Tables[1], true, true)
	for _, want := range []string{`QUALIFY row_number() OVER (PARTITION BY "user_id") <= 3`, `WHEN "spend" < CAST(-5 AS DOUBLE) THEN CAST(-5 AS DOUBLE)`} {
		if !strings.Contains(view, want) {
			t.Errorf("view %s lacks %s", view, want)
		}
	}
}
