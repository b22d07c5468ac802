package console

// The forms here create what the admin API creates, with the same checks;
// the shared parts (sealing, token hashing, the provider's config check,
// the consumer address policy) are the same packages the API uses.

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/delivery"
	"github.com/intakehq/intake/internal/token"
	"github.com/intakehq/intake/provider"
)

// Form limits, as the admin API's.
const (
	maxEventTypes  = 100
	maxConsumerURL = 2048
	resolveTimeout = 5 * time.Second
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
	orgs, err := c.store.ListOrgs(ctx, s.scope())
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
}

func (c *Console) endpoints(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.renderEndpoints(w, r, s, nil)
}

func (c *Console) renderEndpoints(w http.ResponseWriter, r *http.Request, s *session, created *createdEndpoint) error {
	ctx := r.Context()
	eps, err := c.store.ListEndpoints(ctx, s.scope())
	if err != nil {
		return err
	}
	conns, err := c.store.ListConnections(ctx, s.scope())
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
	conn, err := c.store.Connection(r.Context(), s.scope(), connID)
	if err != nil {
		return err
	}
	tok := token.New("")
	e := intake.Endpoint{
		ID: intake.NewID(), OrgID: conn.OrgID, ConnectionID: conn.ID, Provider: conn.Provider, TokenHash: token.Hash(tok),
		Enabled: true, MaxBodyBytes: intake.DefaultMaxBodyBytes, RatePerSec: intake.DefaultRatePerSec, Burst: intake.DefaultBurst,
		CreatedAt: c.clock.Now().UTC(),
	}
	if err := formLimits(r, &e); err != nil {
		return err
	}
	e.SealedToken = c.sealer.Seal([]byte(tok), []byte(e.ID))
	if err := c.store.CreateEndpoint(r.Context(), e); err != nil {
		return err
	}
	c.audit(r, s, e.OrgID, "endpoint.create", "endpoint", e.ID, "connection="+e.ConnectionID)
	return c.renderEndpoints(w, r, s, &createdEndpoint{ID: e.ID, URL: c.publicURL + "/webhooks/" + tok})
}

// formLimits reads the endpoint limits a form sets; blank fields keep the
// defaults.
func formLimits(r *http.Request, e *intake.Endpoint) error {
	if v := strings.TrimSpace(r.PostFormValue("max_body_bytes")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return intake.Errorf(intake.EINVALID, "max body bytes must be a whole number")
		}
		e.MaxBodyBytes = n
	}
	if v := strings.TrimSpace(r.PostFormValue("rate_per_sec")); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return intake.Errorf(intake.EINVALID, "rate per second must be a number (0 for no limit)")
		}
		e.RatePerSec = n
	}
	if v := strings.TrimSpace(r.PostFormValue("burst")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return intake.Errorf(intake.EINVALID, "burst must be a whole number")
		}
		e.Burst = n
	}
	return e.Validate()
}

func (c *Console) setEndpointEnabled(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	e, err := c.store.Endpoint(r.Context(), s.scope(), id)
	if err != nil {
		return err
	}
	e.Enabled = r.PostFormValue("enabled") == "true"
	if err := c.store.UpdateEndpoint(r.Context(), s.scope(), e); err != nil {
		return err
	}
	c.audit(r, s, e.OrgID, "endpoint.update", "endpoint", e.ID, "enabled="+strconv.FormatBool(e.Enabled))
	if e.Enabled {
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
	Secrets   string // how many; "?" when they do not open
	Endpoints int
	Enabled   int
}

func (c *Console) connections(w http.ResponseWriter, r *http.Request, s *session) error {
	ctx := r.Context()
	conns, err := c.store.ListConnections(ctx, s.scope())
	if err != nil {
		return err
	}
	eps, err := c.store.ListEndpoints(ctx, s.scope())
	if err != nil {
		return err
	}
	oc, err := c.orgChoice(ctx, s)
	if err != nil {
		return err
	}
	v := connectionsView{Providers: provider.Names(), Orgs: oc}
	for _, cn := range slices.Backward(conns) {
		row := connectionRow{Connection: cn, Secrets: "?"}
		if secrets, err := c.sealer.ConnectionSecrets(cn); err == nil {
			row.Secrets = strconv.Itoa(len(secrets))
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
	form := struct{ Provider, Name, Config string }{r.PostFormValue("provider"), r.PostFormValue("name"), r.PostFormValue("config")}
	orgID, err := formOrg(r, s)
	if err != nil {
		return err
	}
	if err := intake.CheckName("name", form.Name); err != nil {
		return err
	}
	adapter, ok := provider.Lookup(form.Provider)
	if !ok {
		return intake.Errorf(intake.EINVALID, "choose a provider")
	}
	config, err := provider.CheckConfig(adapter, json.RawMessage(form.Config))
	if err != nil {
		return err
	}
	var secrets []string
	for _, line := range strings.Split(r.PostFormValue("secrets"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			secrets = append(secrets, line)
		}
	}
	if err := provider.CheckSecrets(form.Provider, secrets); err != nil {
		return err
	}
	cn := intake.Connection{ID: intake.NewID(), OrgID: orgID, Provider: form.Provider, Name: form.Name, Config: config, CreatedAt: c.clock.Now().UTC()}
	if secrets == nil {
		secrets = []string{}
	}
	if cn.SealedSecrets, err = c.sealer.SealConnectionSecrets(cn, secrets); err != nil {
		return err
	}
	if err := c.store.CreateConnection(r.Context(), cn); err != nil {
		return err
	}
	c.audit(r, s, cn.OrgID, "connection.create", "connection", cn.ID, "provider="+cn.Provider+" secrets="+strconv.Itoa(len(secrets)))
	return redirect(w, r, "/console/endpoints?connection="+cn.ID)
}

// disableConnection stops a connection's webhooks: every endpoint of it
// refuses them from now on.
func (c *Console) disableConnection(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if _, err := c.store.Connection(r.Context(), s.scope(), id); err != nil {
		return err
	}
	eps, err := c.store.ListEndpoints(r.Context(), s.scope())
	if err != nil {
		return err
	}
	for _, e := range eps {
		if e.ConnectionID != id || !e.Enabled {
			continue
		}
		e.Enabled = false
		if err := c.store.UpdateEndpoint(r.Context(), s.scope(), e); err != nil {
			return err
		}
		c.audit(r, s, e.OrgID, "endpoint.update", "endpoint", e.ID, "enabled=false (connection disabled)")
	}
	return redirect(w, r, "/console/connections?flash=connection-disabled")
}

// consumersView is the consumers page.
type consumersView struct {
	Items   []intake.Consumer
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
	cs, err := c.store.ListConsumers(r.Context(), s.scope())
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
	f := struct{ Name, App, URL, Types string }{Name: r.PostFormValue("name"), App: r.PostFormValue("app"),
		URL: strings.TrimSpace(r.PostFormValue("url")), Types: r.PostFormValue("event_types")}
	orgID, err := formOrg(r, s)
	if err != nil {
		return err
	}
	if err := intake.CheckName("name", f.Name); err != nil {
		return err
	}
	if err := intake.CheckName("app", f.App); err != nil {
		return err
	}
	types := strings.FieldsFunc(f.Types, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	if len(types) == 0 {
		return intake.Errorf(intake.EINVALID, "give at least one event type pattern (e.g. stripe.invoice.paid, stripe.invoice.*, *)")
	}
	if len(types) > maxEventTypes {
		return intake.Errorf(intake.EINVALID, "at most %d event type patterns", maxEventTypes)
	}
	for _, p := range types {
		if err := intake.ValidatePattern(p); err != nil {
			return err
		}
	}
	if f.URL == "" || len(f.URL) > maxConsumerURL {
		return intake.Errorf(intake.EINVALID, "the URL is required (at most %d bytes)", maxConsumerURL)
	}
	ctx, cancel := context.WithTimeout(r.Context(), resolveTimeout)
	err = c.policy.CheckURL(ctx, f.URL)
	cancel()
	if err != nil {
		return intake.Errorf(intake.EINVALID, "%v", err)
	}
	cn := intake.Consumer{ID: intake.NewID(), OrgID: orgID, Name: f.Name, App: f.App, URL: f.URL, EventTypes: types,
		Completion: r.PostFormValue("completion") == "on", Enabled: true, CreatedAt: c.clock.Now().UTC()}
	secret := delivery.NewSecret()
	cn.SealedSecret = c.sealer.Seal([]byte(secret), []byte(cn.ID))
	if err := c.store.CreateConsumer(r.Context(), cn); err != nil {
		return err
	}
	c.audit(r, s, cn.OrgID, "consumer.create", "consumer", cn.ID, "url="+cn.URL)
	return c.renderConsumers(w, r, s, &createdConsumer{ID: cn.ID, Name: cn.Name, Secret: secret})
}

func (c *Console) setConsumerEnabled(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	enabled := r.PostFormValue("enabled") == "true"
	cn, err := c.store.Consumer(r.Context(), s.scope(), id)
	if err != nil {
		return err
	}
	if err := c.store.SetConsumerEnabled(r.Context(), s.scope(), id, enabled); err != nil {
		return err
	}
	c.audit(r, s, cn.OrgID, "consumer.update", "consumer", id, "enabled="+strconv.FormatBool(enabled))
	if enabled {
		return redirect(w, r, "/console/consumers?flash=consumer-enabled")
	}
	return redirect(w, r, "/console/consumers?flash=consumer-disabled")
}
