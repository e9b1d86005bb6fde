package engine

import (
	"os"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

func TestMain(m *testing.M) { os.Exit(modelgen.RunTests(m)) }
