/*
 * 10-api.js - the dashboard's one way to sluiced: the public /v1 API with
 * the caller's bearer token.
 *
 * The token lives in sessionStorage (this tab only, gone when it closes),
 * never in a URL or a cookie; beside it, when a sign-in said so, when it
 * expires. Every answer that is not 2xx becomes an
 * ApiError carrying the API's own {code, field, message}, so that a page
 * shows the server's words, field errors inline. A 401 ends the session:
 * the token is dropped and the login page shown. GETs may pass an ETag
 * (`etag` option); a 304 answer resolves to {notModified: true}.
 *
 * Every way of signing in (a pasted token, a password, single sign-on:
 * 25-signin.js) ends in Api.login(token, expiresAt).
 */
'use strict';

var Api = (function () {
    var KEY = 'sluice.token';
    var EXPIRES = 'sluice.expires';
    var onUnauthorised = null;

    /* `retryAfter`: the Retry-After header of a 429 or 503, as sent. */
    function ApiError(status, body, fallback, retryAfter) {
        var e = (body && body.error) || {};
        this.name = 'ApiError';
        this.status = status;
        this.code = e.code || (status === 0 ? 'network' : 'http_' + status);
        this.field = e.field || null;
        this.message = e.message || fallback || ('HTTP ' + status);
        this.retryAfter = retryAfter || null;
    }
    ApiError.prototype = Object.create(Error.prototype);
    ApiError.prototype.constructor = ApiError;

    function token() {
        try {
            return sessionStorage.getItem(KEY);
        } catch (e) {
            return null;
        }
    }

    /* Keep the token for this tab; `expiresAt` (RFC 3339, optional) is
     * what a sign-in's answer says of it, shown to the user. */
    function login(t, expiresAt) {
        sessionStorage.setItem(KEY, t);
        if (expiresAt)
            sessionStorage.setItem(EXPIRES, String(expiresAt));
        else
            sessionStorage.removeItem(EXPIRES);
    }

    /* When the token expires (ms since the epoch), or null: unknown. */
    function expires() {
        try {
            var t = Date.parse(sessionStorage.getItem(EXPIRES) || '');
            return isNaN(t) ? null : t;
        } catch (e) {
            return null;
        }
    }

    function logout() {
        try {
            sessionStorage.removeItem(KEY);
            sessionStorage.removeItem(EXPIRES);
        } catch (e) { /* storage disabled: nothing kept */ }
    }

    /* "/v1/jobs" + {state: "Pending", team: ""} -> "/v1/jobs?state=Pending":
     * empty, null and undefined values are left out. */
    function url(path, params) {
        var q = [];
        if (params) {
            Object.keys(params).forEach(function (k) {
                var v = params[k];
                if (v === null || v === undefined || v === '')
                    return;
                q.push(encodeURIComponent(k) + '=' + encodeURIComponent(String(v)));
            });
        }
        return path + (q.length ? '?' + q.join('&') : '');
    }

    /* One request. opts: {method, params, body (string or object: sent as
     * JSON), type (Content-Type of a string body), etag, as: 'json'|'text'|
     * 'blob'|'response', signal, noAuth}. Resolves to the decoded body. */
    function request(path, opts) {
        opts = opts || {};
        var headers = {};
        var t = token();
        if (t && !opts.noAuth)
            headers['Authorization'] = 'Bearer ' + t;
        var body = opts.body;
        if (body !== undefined && body !== null && typeof body !== 'string') {
            body = JSON.stringify(body);
            headers['Content-Type'] = 'application/json';
        } else if (typeof body === 'string') {
            headers['Content-Type'] = opts.type || 'application/json';
        }
        if (opts.etag)
            headers['If-None-Match'] = opts.etag;
        return fetch(url(path, opts.params), {
            method: opts.method || 'GET',
            headers: headers,
            body: body,
            cache: 'no-store',
            credentials: 'omit',
            signal: opts.signal
        }).then(function (res) {
            if (res.status === 304)
                return {notModified: true, etag: opts.etag};
            if (res.ok) {
                if (opts.as === 'response')
                    return res;
                if (opts.as === 'text')
                    return res.text();
                if (opts.as === 'blob')
                    return res.blob();
                return res.json().then(function (j) {
                    if (opts.etag !== undefined && j && typeof j === 'object')
                        Object.defineProperty(j, '_etag', {value: res.headers.get('ETag'), enumerable: false});
                    return j;
                });
            }
            return res.text().then(function (txt) {
                var j = null;
                try {
                    j = JSON.parse(txt);
                } catch (e) { /* not JSON: the text is the message */ }
                var err = new ApiError(res.status, j, txt.slice(0, 200), res.headers.get('Retry-After'));
                if (res.status === 401 && onUnauthorised)
                    onUnauthorised(err);
                throw err;
            });
        }, function (e) {
            if (e && e.name === 'AbortError')
                throw e;
            throw new ApiError(0, null, 'sluiced did not answer: ' + (e && e.message ? e.message : e));
        });
    }

    function get(path, params, opts) {
        var o = Object.assign({}, opts || {});
        o.params = params;
        return request(path, o);
    }

    function post(path, body, opts) {
        var o = Object.assign({method: 'POST'}, opts || {});
        o.body = body;
        return request(path, o);
    }

    function del(path, params) {
        return request(path, {method: 'DELETE', params: params});
    }

    /* Save what a GET answers as a file the browser downloads: the
     * bytes exactly as sluiced sent them. */
    function download(path, params, filename) {
        return request(path, {params: params, as: 'response'}).then(function (res) {
            var cd = res.headers.get('Content-Disposition') || '';
            var m = /filename="([^"]+)"/.exec(cd);
            var name = filename || (m ? m[1] : 'sluice-download');
            return res.blob().then(function (blob) {
                return save(blob, name);
            });
        });
    }

    /* Offer a Blob as a file the browser downloads under `name`, as it
     * is (the pages' downloads made of several answers use it). */
    function save(blob, name) {
        var a = document.createElement('a');
        var href = URL.createObjectURL(blob);
        a.href = href;
        a.download = name;
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(function () {
            URL.revokeObjectURL(href);
        }, 10000);
        return {name: name, size: blob.size};
    }

    return {
        ApiError: ApiError, token: token, login: login, expires: expires, logout: logout, url: url,
        request: request, get: get, post: post, del: del, download: download, save: save,
        set onUnauthorised(fn) {
            onUnauthorised = fn;
        }
    };
})();
