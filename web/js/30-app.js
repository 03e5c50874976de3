/*
 * 30-app.js - the dashboard's shell: pages and their URLs (the History
 * API: every page has a stable address under /ui/, back and forward work),
 * the navigation each role sees, login and logout.
 *
 * A page registers itself with App.page(pattern, {title, render(ctx)}).
 * render gets a context for this one showing of the page:
 *   ctx.main      the element to fill
 *   ctx.params    the pattern's parameters ({id: "42"} for /jobs/:id)
 *   ctx.query     the URL's query (URLSearchParams)
 *   ctx.who       {user, team, role} of the token
 *   ctx.can(what) whether the role may: 'submit', 'audit', 'admin',
 *                 'allTeams', 'manage'
 *   ctx.alive()   false once the user has left the page: late answers
 *                 are dropped
 *   ctx.every(ms, fn)   run fn now and every ms while the page shows and
 *                 the tab is visible; fn may return a promise (never two
 *                 at once)
 *   ctx.onCleanup(fn)   run when the page goes
 *   ctx.setQuery(obj, {push})  change the URL's query without showing the
 *                 page again (a filter change); push adds a history entry
 *   ctx.navigate(url)   go to another page
 * What a page shows comes from the API with the token's rights, so a
 * page never filters by role itself beyond hiding what the API refuses.
 */
'use strict';

var App = (function () {
    var h = Dom.h;
    var pages = [];
    var current = null;  /* the context of the page showing */
    var who = null;      /* whoami of the token, once known */

    /* Navigation: [path, label, who may see it (a ctx.can word or null)]. */
    var NAV = [
        ['/ui/', 'Overview', null],
        ['/ui/nodes', 'Nodes', null],
        ['/ui/queues', 'Queues', null],
        ['/ui/jobs', 'Jobs', null],
        ['/ui/submit', 'Submit', 'submit'],
        ['/ui/cost', 'Teams & cost', 'reports'],
        ['/ui/audit', 'Audit', 'audit'],
        ['/ui/models', 'Models', 'lineage']
    ];

    /* What a role may, as the API's role table says (docs/api-contract.md,
     * Roles). Only for what the navigation offers: the API decides. */
    var CAN = {
        submit: ['admin', 'team-admin', 'member'],
        audit: ['admin', 'auditor'],
        admin: ['admin'],
        allTeams: ['admin', 'auditor'],
        manage: ['admin', 'team-admin'],
        reports: ['admin', 'team-admin', 'member', 'viewer', 'auditor'],
        lineage: ['admin', 'team-admin', 'member', 'viewer', 'auditor']
    };

    function can(what) {
        return !!(who && CAN[what] && CAN[what].indexOf(who.role) >= 0);
    }

    function page(pattern, def) {
        var names = [];
        var re = new RegExp('^' + pattern.replace(/\/:([a-zA-Z]+)/g, function (m, n) {
            names.push(n);
            return '/([^/]+)';
        }) + '/?$');
        pages.push({pattern: pattern, re: re, names: names, def: def});
    }

    function match(path) {
        var rest = path.replace(/^\/ui/, '') || '/';
        for (var i = 0; i < pages.length; i++) {
            var m = pages[i].re.exec(rest);
            if (m) {
                var params = {};
                pages[i].names.forEach(function (n, j) {
                    params[n] = decodeURIComponent(m[j + 1]);
                });
                return {page: pages[i], params: params};
            }
        }
        return null;
    }

    function renderNav() {
        var nav = document.getElementById('nav');
        var path = location.pathname;
        Dom.clear(nav);
        var ul = h('ul');
        NAV.forEach(function (n) {
            if (n[2] && !can(n[2]))
                return;
            var active = n[0] === '/ui/' ? path === '/ui/' || path === '/ui' :
                path === n[0] || path.indexOf(n[0] + '/') === 0;
            ul.appendChild(h('li', null, Dom.link(n[0], n[1], {'aria-current': active ? 'page' : null})));
        });
        nav.appendChild(ul);
        var w = document.getElementById('who');
        Dom.clear(w);
        if (who) {
            var exp = Api.expires();
            w.appendChild(h('span', {class: 'who-name', title: 'team ' + who.team + ', role ' + who.role +
                (exp ? '; signed in until ' + Fmt.time(exp) : '')},
                who.user, h('small', null, ' ' + who.role + ' \u00b7 ' + who.team)));
            w.appendChild(h('button', {type: 'button', class: 'link', id: 'logout', onclick: logout}, 'Log out'));
        }
        document.getElementById('top').hidden = !who;
    }

    function leave() {
        if (!current)
            return;
        current._alive = false;
        current._cleanups.forEach(function (fn) {
            try {
                fn();
            } catch (e) { /* a cleanup that fails must not stop the others */ }
        });
        current = null;
    }

    function makeCtx(m, main) {
        var ctx = {
            main: main,
            params: m ? m.params : {},
            query: new URLSearchParams(location.search),
            who: who,
            can: can,
            _alive: true,
            _cleanups: [],
            alive: function () {
                return ctx._alive;
            },
            onCleanup: function (fn) {
                ctx._cleanups.push(fn);
            },
            navigate: navigate,
            setQuery: function (obj, o) {
                var q = new URLSearchParams();
                Object.keys(obj).forEach(function (k) {
                    if (obj[k] !== null && obj[k] !== undefined && obj[k] !== '')
                        q.set(k, obj[k]);
                });
                var s = q.toString();
                var url = location.pathname + (s ? '?' + s : '');
                if (o && o.push)
                    history.pushState({}, '', url);
                else
                    history.replaceState({}, '', url);
                ctx.query = q;
            },
            every: function (ms, fn) {
                var busy = false, timer = null;
                function tick() {
                    if (!ctx._alive)
                        return;
                    if (busy || document.hidden) {
                        timer = setTimeout(tick, ms);
                        return;
                    }
                    busy = true;
                    Promise.resolve().then(fn).catch(function (e) {
                        if (window.console)
                            console.warn('refresh failed', e);
                    }).then(function () {
                        busy = false;
                        if (ctx._alive)
                            timer = setTimeout(tick, ms);
                    });
                }
                tick();
                ctx.onCleanup(function () {
                    clearTimeout(timer);
                });
            }
        };
        return ctx;
    }

    /* Show the page of the current URL. */
    function route(focus) {
        leave();
        var main = document.getElementById('main');
        Dom.clear(main);
        if (!Api.token() || !who) {
            if (location.pathname !== '/ui/login') {
                var next = location.pathname + location.search;
                history.replaceState({}, '', '/ui/login' + (next !== '/ui/' ? '?next=' + encodeURIComponent(next) : ''));
            }
        }
        renderNav();
        var m = location.pathname === '/ui/login' ? {page: {def: LOGIN}, params: {}} : match(location.pathname);
        var ctx = makeCtx(m, main);
        current = ctx;
        if (!m) {
            document.title = 'Not found \u00b7 Sluice';
            main.appendChild(h('h1', null, 'Not found'));
            main.appendChild(h('p', null, 'No page at ' + location.pathname + '. ', Dom.link('/ui/', 'Go to the overview')));
        } else {
            document.title = (m.page.def.title || 'Sluice') + ' \u00b7 Sluice';
            try {
                var p = m.page.def.render(ctx);
                if (p && p.catch) {
                    p.catch(function (e) {
                        if (ctx.alive())
                            main.appendChild(Dom.message(e));
                    });
                }
            } catch (e) {
                main.appendChild(Dom.message(e));
            }
        }
        if (focus) {
            var h1 = main.querySelector('h1');
            (h1 || main).setAttribute('tabindex', '-1');
            (h1 || main).focus({preventScroll: false});
        }
    }

    function navigate(url, opts) {
        if (opts && opts.replace)
            history.replaceState({}, '', url);
        else
            history.pushState({}, '', url);
        window.scrollTo(0, 0);
        route(true);
    }

    function logout() {
        Api.logout();
        who = null;
        navigate('/ui/login');
    }

    /* Log in with a token: ask whoami; keep it only when sluiced takes it.
     * `expiresAt`: when a sign-in's answer says the token expires. */
    function loginWith(token, expiresAt) {
        Api.login(token, expiresAt);
        return Api.get('/v1/whoami').then(function (w) {
            who = w;
            return w;
        }, function (e) {
            Api.logout();
            throw e;
        });
    }

    /* The sign-in requests go without a token (a stale one would only
     * confuse the answer). */
    function postPublic(path, body) {
        return Api.post(path, body, {noAuth: true});
    }

    /* The password form (LDAP): the password goes in one request and is
     * cleared from the input at once; never kept. */
    function passwordForm(done) {
        var err = h('div', {class: 'signin-error'});
        var button = h('button', {type: 'submit', class: 'primary'}, 'Sign in');
        var form = h('form', {class: 'signin-password', novalidate: true},
            h('h2', null, 'Your directory account'),
            Dom.field({label: 'User name', name: 'user', required: true,
                attrs: {autocomplete: 'username', autocapitalize: 'none', spellcheck: 'false'}}),
            Dom.field({label: 'Password', name: 'password', type: 'password', required: true,
                attrs: {autocomplete: 'current-password'}}),
            err, button);
        form.addEventListener('submit', function (ev) {
            ev.preventDefault();
            var user = form.elements.user.value.trim();
            var pw = form.elements.password.value;
            form.elements.password.value = '';
            Dom.clear(err);
            if (!user || !pw) {
                err.appendChild(Dom.message(!user ? 'Enter your user name.' : 'Enter your password.'));
                (user ? form.elements.password : form.elements.user).focus();
                return;
            }
            button.disabled = true;
            SignIn.password(postPublic, user, pw).then(function (b) {
                return done(b.token, b.expires_at);
            }).catch(function (e) {
                button.disabled = false;
                err.appendChild(Dom.message(SignIn.errorText(e, 'password', user)));
                form.elements.password.focus();
            });
            pw = null;
        });
        return form;
    }

    /* Single sign-on: the OIDC device flow. The user approves at the
     * provider, in another tab, with the code shown here; this page polls
     * sluiced until it is done. Leaving the page cancels it. */
    function ssoBox(ctx, oidc, done) {
        var err = h('div', {class: 'signin-error'});
        var shown = h('div', {class: 'device', hidden: true});
        var startBtn = h('button', {type: 'button', class: 'primary'}, 'Sign in with single sign-on');
        var host = '';
        try {
            host = oidc.issuer ? new URL(oidc.issuer).host : '';
        } catch (e) { /* not a URL: not named */ }
        var flow = null;
        var status = h('p', {class: 'device-status', role: 'status'});
        var expiresAt = 0;

        function waiting(interval, note) {
            var text = (note ? note + ' ' : '') + 'Waiting for you to approve (checked every ' + interval +
                ' s); the code expires at ' + Fmt.time(expiresAt) + '.';
            if (status.textContent !== text) /* a screen reader hears a change only */
                status.textContent = text;
        }

        function begin() {
            if (flow)
                flow.cancel();
            Dom.clear(err);
            Dom.clear(shown);
            shown.hidden = true;
            startBtn.disabled = true;
            startBtn.textContent = 'Sign in with single sign-on';
            flow = SignIn.deviceFlow({
                post: postPublic,
                setTimer: function (fn, ms) {
                    return setTimeout(fn, ms);
                },
                clearTimer: function (t) {
                    clearTimeout(t);
                },
                now: Date.now,
                onCode: function (c) {
                    expiresAt = c.expiresAt;
                    var link = h('a', {href: c.uri, target: '_blank', rel: 'noopener noreferrer', class: 'device-link'},
                        'Open the sign-in page' + (host ? ' of ' + host : ''));
                    shown.appendChild(h('p', null, link, ' (a new tab) and enter this code:'));
                    shown.appendChild(h('div', {class: 'user-code'}, c.userCode));
                    shown.appendChild(status);
                    shown.appendChild(h('button', {type: 'button', onclick: cancel}, 'Cancel'));
                    waiting(c.interval, null);
                    shown.hidden = false;
                    startBtn.hidden = true;
                    link.focus();
                },
                onWait: function (w) {
                    waiting(w.interval, w.note);
                },
                onDone: function (b) {
                    status.textContent = 'Approved: signing in\u2026';
                    Promise.resolve(done(b.token, b.expires_at)).catch(function (e) {
                        fail(e.message || String(e));
                    });
                },
                onFail: function (text) {
                    fail(text);
                }
            });
            flow.start();
        }

        function fail(text) {
            shown.hidden = true;
            Dom.clear(shown);
            err.appendChild(Dom.message(text));
            startBtn.textContent = 'Start again';
            startBtn.hidden = false;
            startBtn.disabled = false;
        }

        function cancel() {
            if (flow)
                flow.cancel();
            shown.hidden = true;
            Dom.clear(shown);
            Dom.clear(err);
            err.appendChild(Dom.message('Single sign-on cancelled.', 'info'));
            startBtn.textContent = 'Sign in with single sign-on';
            startBtn.hidden = false;
            startBtn.disabled = false;
            startBtn.focus();
        }

        startBtn.addEventListener('click', begin);
        ctx.onCleanup(function () {
            if (flow)
                flow.cancel();
        });
        return h('div', {class: 'signin-sso'},
            h('h2', null, 'Single sign-on'),
            h('p', null, 'Sign in with your company account' + (host ? ' at ' + host : '') + '.'),
            startBtn, shown, err);
    }

    var LOGIN = {
        title: 'Log in',
        render: function (ctx) {
            function goOn() {
                var next = ctx.query.get('next');
                navigate(next && next.indexOf('/ui/') === 0 && next.indexOf('//') < 0 ? next : '/ui/', {replace: true});
            }
            /* a token from a password or single sign-on */
            function signedIn(token, expiresAt) {
                return loginWith(token, expiresAt).then(function () {
                    if (ctx.alive())
                        goOn();
                }, function (e) {
                    /* not the sign-in's error: words of its own */
                    throw new Error('sluiced does not accept the token it gave (' + e.message + '); try again.');
                });
            }
            var err = h('div', {class: 'login-error'});
            var more = h('div', {class: 'login-more'});
            var form = h('form', {class: 'login-token', novalidate: true},
                h('p', null, 'Paste an API token. ', h('code', null, 'sluice token create'),
                  ' makes one; your administrator can make one for you. The token is kept for this tab only and forgotten when it closes.'),
                Dom.field({label: 'API token', name: 'token', type: 'password', required: true,
                    attrs: {autocomplete: 'off', spellcheck: 'false'}}),
                err,
                h('button', {type: 'submit', class: 'primary'}, 'Log in'));
            form.addEventListener('submit', function (ev) {
                ev.preventDefault();
                var t = form.elements.token.value.trim();
                Dom.clear(err);
                if (!t) {
                    err.appendChild(Dom.message('Enter a token.'));
                    return;
                }
                loginWith(t).then(goOn, function (e) {
                    err.appendChild(Dom.message(e.status === 401 ? 'sluiced does not accept this token (unknown, expired or revoked).' : e));
                });
            });
            ctx.main.appendChild(h('div', {class: 'login'}, h('h1', null, 'Log in to Sluice'), more, form));
            form.elements.token.focus();
            /* What else this server offers; without an answer, a token only. */
            Api.get('/v1/login', null, {noAuth: true}).then(SignIn.methods, function () {
                return SignIn.methods(null);
            }).then(function (m) {
                if (!ctx.alive() || (!m.password && !m.oidc))
                    return;
                if (m.oidc)
                    more.appendChild(ssoBox(ctx, m.oidc, signedIn));
                if (m.password)
                    more.appendChild(passwordForm(signedIn));
                more.appendChild(h('h2', {class: 'login-or'}, 'Or with an API token'));
                var tf = form.elements.token;
                if (m.password && document.activeElement === tf && !tf.value)
                    more.querySelector('input[name=user]').focus();
            });
        }
    };

    /* Links inside the dashboard go through the router. */
    function onClick(ev) {
        if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey)
            return;
        var a = ev.target.closest ? ev.target.closest('a[data-link]') : null;
        if (!a || a.target || a.hasAttribute('download'))
            return;
        var url = new URL(a.href, location.href);
        if (url.origin !== location.origin || url.pathname.indexOf('/ui') !== 0)
            return;
        ev.preventDefault();
        navigate(url.pathname + url.search);
    }

    function start() {
        Api.onUnauthorised = function () {
            if (who) {
                who = null;
                Api.logout();
                Dom.toast('Your token is no longer accepted: log in again.');
                navigate('/ui/login?next=' + encodeURIComponent(location.pathname + location.search), {replace: true});
            }
        };
        document.addEventListener('click', onClick);
        window.addEventListener('popstate', function () {
            route(true);
        });
        if (Api.token()) {
            Api.get('/v1/whoami').then(function (w) {
                who = w;
                route(false);
            }, function () {
                Api.logout();
                route(false);
            });
        } else {
            route(false);
        }
    }

    return {page: page, start: start, navigate: navigate, can: can,
        get who() {
            return who;
        }};
})();
