package overload

import (
	"context"
	"reflect"
	"testing"
)

// TestBudgetVariantIsUntuned checks that the budget variant sets only names
// and the queue's drop hook: every sizing field of its Queue (Target,
// MinUseful and the rest) is left at its default.
func TestBudgetVariantIsUntuned(t *testing.T) {
	allowed := map[string]bool{"Name": true, "OnDrop": true}
	for what, v := range map[string]any{
		"Queue": budgetQueue(func(context.Context, *queued, error) {}),
	} {
		rv := reflect.ValueOf(v).Elem()
		for i := range rv.NumField() {
			f := rv.Type().Field(i)
			if !f.IsExported() || allowed[f.Name] {
				continue
			}
			if !rv.Field(i).IsZero() {
				t.Errorf("the budget variant's %s sets %s: want every sizing field at its default", what, f.Name)
			}
		}
	}
}
