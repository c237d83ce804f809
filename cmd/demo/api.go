package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/updatable-lrps/bbs/bbsclient"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/router"
)

// available reports whether the API answers /v1/ping with available: true. No answer at
// all (nothing listening) is returned as an error; an error the API answered is not.
func available(ctx context.Context, api *bbsclient.Client) (bool, error) {
	ok, err := api.Ping(ctx)
	var noAnswer *url.Error
	if errors.As(err, &noAnswer) {
		return false, err
	}
	return ok && err == nil, nil
}

// exists reports whether the LRP guid is desired.
func exists(ctx context.Context, api *bbsclient.Client, guid string) (bool, error) {
	_, err := api.DesiredLRPByProcessGUID(ctx, guid)
	if model.IsType(err, model.ErrResourceNotFound) {
		return false, nil
	}
	return err == nil, err
}

// instances lists the LRP's instances.
func instances(ctx context.Context, api *bbsclient.Client, guid string) ([]model.ActualLRP, error) {
	return api.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid})
}

// readRouterStats reads the router's GET /stats.
func readRouterStats(ctx context.Context, c *http.Client, url string) (*router.Stats, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := c.Do(r)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	var s router.Stats
	return &s, json.NewDecoder(res.Body).Decode(&s)
}
