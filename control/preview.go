package control

// PreviewItems is how many of the rows a dry run selects it shows.
const PreviewItems = 10

// Preview is a bulk action's dry run: how many rows it would take and the
// first PreviewItems of them. Nothing changes.
type Preview[T any] struct {
	Count int
	Items []T
}
