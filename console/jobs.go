package console

import (
	"net/http"

	"github.com/intakehq/intake/control"
)

// job shows a window replay's or bulk job's progress, whichever process
// runs it.
func (c *Console) job(w http.ResponseWriter, r *http.Request, s *session) error {
	j, err := c.ctl.ReplayJob(r.Context(), s.caller(), r.PathValue("id"))
	if err != nil {
		return err
	}
	c.render(w, r, s, http.StatusOK, "job", "Job", j)
	return nil
}

// confirmed reports whether a bulk action's form confirms a search past
// the bulk maximum, to run as a job.
func confirmed(r *http.Request) bool { return r.PostFormValue("confirm") == "true" }

// jobOr answers a bulk action that failed with its error, or one that
// became a job with the job's page.
func jobOr(w http.ResponseWriter, r *http.Request, res control.BulkResult, err error) error {
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/jobs/"+res.Job.ID)
}
