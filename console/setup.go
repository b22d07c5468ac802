package console

// The forms here decode into the control plane's actions, the same ones
// the admin API performs.

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/control"
	"github.com/intakehq/intake/provider"
)

// orgChoice is what a create form needs to know about orgs: staff pick one,
// an org's session acts in its own.
type orgChoice struct {
	Staff bool
	Orgs  []option
	Names map[string]string
}

func (c *Console) orgChoice(ctx context.Context, s *session) (orgChoice, error) {
	oc := orgChoice{Staff: s.staff, Names: map[string]string{}}
	orgs, err := c.ctl.Orgs(ctx, s.caller())
	if err != nil {
		return oc, err
	}
	for _, o := range orgs {
		oc.Names[o.ID] = o.Name
		oc.Orgs = append(oc.Orgs, option{Value: o.ID, Label: o.Name})
	}
	return oc, nil
}

// formOrg is the org a create form acts in.
func formOrg(r *http.Request, s *session) (string, error) {
	if !s.staff {
		return s.OrgID, nil
	}
	id := r.PostFormValue("org")
	if !intake.ValidID(id) {
		return "", intake.Errorf(intake.EINVALID, "choose an org")
	}
	return id, nil
}

// endpointsView is the endpoints page.
type endpointsView struct {
	Items       []endpointRow
	Connections []option
	Orgs        orgChoice
	Selected    string // the connection the create form starts on
	Created     *createdEndpoint
	Defaults    intake.Endpoint
}

type endpointRow struct {
	intake.Endpoint
	Connection string
}

// createdEndpoint is shown once, right after creation: only the token's
// hash is kept.
type createdEndpoint struct {
	ID, URL string
	// Rotated: a rotation's new URL, the one it replaced working until
	// PreviousUntil (Stopped: already not).
	Rotated       bool
	PreviousUntil time.Time
	Stopped       bool
}

func (c *Console) endpoints(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.renderEndpoints(w, r, s, nil)
}

func (c *Console) renderEndpoints(w http.ResponseWriter, r *http.Request, s *session, created *createdEndpoint) error {
	ctx := r.Context()
	eps, err := c.ctl.Endpoints(ctx, s.caller())
	if err != nil {
		return err
	}
	conns, err := c.ctl.Connections(ctx, s.caller())
	if err != nil {
		return err
	}
	oc, err := c.orgChoice(ctx, s)
	if err != nil {
		return err
	}
	v := endpointsView{Orgs: oc, Created: created, Selected: r.URL.Query().Get("connection"),
		Defaults: intake.Endpoint{MaxBodyBytes: intake.DefaultMaxBodyBytes, RatePerSec: intake.DefaultRatePerSec, Burst: intake.DefaultBurst}}
	labels := map[string]string{}
	for _, cn := range conns {
		label := cn.Provider + " · " + cn.Name
		if s.staff {
			label += " (" + oc.Names[cn.OrgID] + ")"
		}
		labels[cn.ID] = label
		v.Connections = append(v.Connections, option{Value: cn.ID, Label: label})
	}
	for _, e := range slices.Backward(eps) {
		v.Items = append(v.Items, endpointRow{Endpoint: e, Connection: labels[e.ConnectionID]})
	}
	c.render(w, r, s, http.StatusOK, "endpoints", "Endpoints", v)
	return nil
}

func (c *Console) createEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	connID := r.PostFormValue("connection")
	if !intake.ValidID(connID) {
		return intake.Errorf(intake.EINVALID, "choose a connection")
	}
	l, err := formLimits(r)
	if err != nil {
		return err
	}
	e, err := c.ctl.CreateEndpoint(r.Context(), s.caller(), connID, l)
	if err != nil {
		return err
	}
	return c.renderEndpoints(w, r, s, &createdEndpoint{ID: e.ID, URL: e.URL})
}

// rotateEndpoint gives an endpoint a new URL and shows it once.
func (c *Console) rotateEndpoint(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	overlap, err := formDuration(r, "overlap")
	if err != nil {
		return err
	}
	e, err := c.ctl.RotateEndpoint(r.Context(), s.caller(), id, overlap)
	if err != nil {
		return err
	}
	return c.renderEndpoints(w, r, s, &createdEndpoint{ID: e.ID, URL: e.URL, Rotated: true, PreviousUntil: e.PreviousExpiresAt,
		Stopped: !e.PreviousExpiresAt.After(c.clock.Now())})
}

// formLimits reads the endpoint limits a form sets; blank fields keep the
// defaults.
func formLimits(r *http.Request) (control.Limits, error) {
	var l control.Limits
	if v := strings.TrimSpace(r.PostFormValue("name")); v != "" {
		l.Name = &v
	}
	if v := strings.TrimSpace(r.PostFormValue("max_body_bytes")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return l, intake.Errorf(intake.EINVALID, "max body bytes must be a whole number")
		}
		l.MaxBodyBytes = &n
	}
	if v := strings.TrimSpace(r.PostFormValue("rate_per_sec")); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return l, intake.Errorf(intake.EINVALID, "rate per second must be a number (0 for no limit)")
		}
		l.RatePerSec = &n
	}
	if v := strings.TrimSpace(r.PostFormValue("burst")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return l, intake.Errorf(intake.EINVALID, "burst must be a whole number")
		}
		l.Burst = &n
	}
	return l, nil
}

func (c *Console) setEndpointEnabled(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	enabled := r.PostFormValue("enabled") == "true"
	if _, err := c.ctl.UpdateEndpoint(r.Context(), s.caller(), id, control.Limits{Enabled: &enabled}); err != nil {
		return err
	}
	if enabled {
		return redirect(w, r, "/console/endpoints?flash=endpoint-enabled")
	}
	return redirect(w, r, "/console/endpoints?flash=endpoint-disabled")
}

// connectionsView is the connections page. Secrets are never shown, only
// how many are active.
type connectionsView struct {
	Items     []connectionRow
	Providers []string
	Orgs      orgChoice
}

type connectionRow struct {
	intake.Connection
	Settings  []configFact
	Secrets   string // how many; "?" when they do not open
	Endpoints int
	Enabled   int
}

func (c *Console) connections(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	conns, err := c.ctl.Connections(ctx, s.caller())
	if err != nil {
		return err
	}
	eps, err := c.ctl.Endpoints(ctx, s.caller())
	if err != nil {
		return err
	}
	oc, err := c.orgChoice(ctx, s)
	if err != nil {
		return err
	}
	v := connectionsView{Providers: provider.Names(), Orgs: oc}
	for _, cn := range slices.Backward(conns) {
		row := connectionRow{Connection: cn, Settings: configFacts(control.Settings(cn)), Secrets: "?"}
		if n, ok := c.ctl.SecretCount(cn); ok {
			row.Secrets = strconv.Itoa(n)
		}
		for _, e := range eps {
			if e.ConnectionID == cn.ID {
				row.Endpoints++
				if e.Enabled {
					row.Enabled++
				}
			}
		}
		v.Items = append(v.Items, row)
	}
	c.render(w, r, s, http.StatusOK, "connections", "Connections", v)
	return nil
}

func (c *Console) createConnection(w http.ResponseWriter, r *http.Request, s *session) error {
	orgID, err := formOrg(r, s)
	if err != nil {
		return err
	}
	var secrets []string
	for _, line := range strings.Split(r.PostFormValue("secrets"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			secrets = append(secrets, line)
		}
	}
	cn, err := c.ctl.CreateConnection(r.Context(), s.caller(), control.NewConnection{OrgID: orgID, Provider: r.PostFormValue("provider"),
		Name: r.PostFormValue("name"), Secrets: secrets, Config: json.RawMessage(r.PostFormValue("config"))})
	if err != nil {
		return err
	}
	return redirect(w, r, "/console/endpoints?connection="+cn.ID)
}

// disableConnection stops a connection's webhooks: every endpoint of it
// refuses them from now on.
func (c *Console) disableConnection(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if _, err := c.ctl.DisableConnection(r.Context(), s.caller(), id); err != nil {
		return err
	}
	return redirect(w, r, "/console/connections?flash=connection-disabled")
}

// consumersView is the consumers page.
type consumersView struct {
	Items   []control.StatedConsumer
	Orgs    orgChoice
	Created *createdConsumer
}

// createdConsumer is shown once, right after registration: the secret is
// kept sealed and never shown again.
type createdConsumer struct {
	ID, Name, Secret string
}

func (c *Console) consumers(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.renderConsumers(w, r, s, nil)
}

func (c *Console) renderConsumers(w http.ResponseWriter, r *http.Request, s *session, created *createdConsumer) error {
	cs, err := c.ctl.Consumers(r.Context(), s.caller())
	if err != nil {
		return err
	}
	oc, err := c.orgChoice(r.Context(), s)
	if err != nil {
		return err
	}
	slices.Reverse(cs) // newest first, as every list
	v := consumersView{Items: cs, Orgs: oc, Created: created}
	c.render(w, r, s, http.StatusOK, "consumers", "Consumers", v)
	return nil
}

func (c *Console) createConsumer(w http.ResponseWriter, r *http.Request, s *session) error {
	orgID, err := formOrg(r, s)
	if err != nil {
		return err
	}
	types := formEventTypes(r)
	cn, secret, err := c.ctl.CreateConsumer(r.Context(), s.caller(), control.NewConsumer{OrgID: orgID, Name: r.PostFormValue("name"),
		App: r.PostFormValue("app"), URL: strings.TrimSpace(r.PostFormValue("url")), EventTypes: types,
		Completion: r.PostFormValue("completion") == "on"})
	if err != nil {
		return err
	}
	return c.renderConsumers(w, r, s, &createdConsumer{ID: cn.ID, Name: cn.Name, Secret: secret})
}

func (c *Console) setConsumerEnabled(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	enabled := r.PostFormValue("enabled") == "true"
	if _, err := c.ctl.UpdateConsumer(r.Context(), s.caller(), id, control.ConsumerUpdate{Enabled: &enabled}); err != nil {
		return err
	}
	if enabled {
		return redirect(w, r, "/console/consumers?flash=consumer-enabled")
	}
	return redirect(w, r, "/console/consumers?flash=consumer-disabled")
}
