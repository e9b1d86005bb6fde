package engine

import (
	"os"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

func TestMain(m *testing.M) { os.Exit(modelgentest.RunTests(m)) }
