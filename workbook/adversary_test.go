package workbook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAdversaryRecords: plays and solver runs are kept beside the hunts' and
// the exercises' records, a won level stays won, and nothing else is lost.
func TestAdversaryRecords(t *testing.T) {
	root := huntRoot(t)
	old := `{"note": "x", "exercises": {"01-find-device": {"status": "done"}}, "hunts": {"3": {"status": "solved", "score": 8}}}`
	if err := os.WriteFile(filepath.Join(root, ProgressFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	if a := p.AdversaryOf("wmb"); a.Status != AdversaryNotTried {
		t.Fatalf("a level never played: %+v", a)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p.RecordPlay("missing-wmb", false, 9, now)
	p.RecordPlay("missing-wmb", true, 8, now)
	p.RecordPlay("missing-wmb", true, 6, now)
	p.RecordPlay("missing-wmb", false, 3, now)
	p.RecordSolve("missing-wmb", false)
	p.RecordSolve("wmb", true)
	p.RecordSolve("drain-then-ack", false)
	if err := p.Save(root); err != nil {
		t.Fatal(err)
	}
	q, err := LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	if a := q.AdversaryOf("missing-wmb"); a.Status != AdversaryWon || a.Choices != 6 || a.Plays != 4 || !a.SolverShown || a.Won != "2026-01-02T03:04:05Z" {
		t.Errorf("missing-wmb: %+v", a)
	}
	if a := q.AdversaryOf("wmb"); a.Status != AdversaryProved {
		t.Errorf("wmb: %+v", a)
	}
	if a := q.AdversaryOf("drain-then-ack"); a.Status != AdversaryTried {
		t.Errorf("drain-then-ack, solver shown: %+v", a)
	}
	if q.HuntStatusOf(3).Score != 8 || q.Exercises["01-find-device"].Status != Done {
		t.Errorf("the other records: %+v %+v", q.Hunts, q.Exercises)
	}
}

func TestCorruptAdversaryRecordIsRefused(t *testing.T) {
	for _, content := range []string{
		`{"adversary": {"wmb": {"status": "champion"}}}`,
		`{"adversary": {"wmb": null}}`,
		`{"adversary": {"wmb": {"status": "won", "plays": -1}}}`,
		`{"adversary": []}`,
	} {
		root := huntRoot(t)
		path := filepath.Join(root, ProgressFile)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadProgress(root)
		if err == nil || !strings.Contains(err.Error(), ProgressFile) || !strings.Contains(err.Error(), "afresh") {
			t.Errorf("%s: error %v", content, err)
		}
		if data, _ := os.ReadFile(path); string(data) != content {
			t.Errorf("%s: the file changed to %s", content, data)
		}
	}
}
