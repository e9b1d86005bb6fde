package structured

// Validate is validate for the external tests (schema_suite_test.go): the independent reading
// of JSON Schema that checks documents a real model wrote.
var Validate = validate
