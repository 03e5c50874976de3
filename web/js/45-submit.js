/*
 * 45-submit.js - the Submit page (/ui/submit): a form for a job's common
 * fields and a YAML editor for the whole spec (docs/jobspec.md), a dry run
 * that shows the admission verdict, and the submission itself
 * (POST /v1/jobs, ?dry_run=true for the dry run).
 *
 * The command field is split into an argv as a shell splits words (quotes
 * and backslashes) with nothing expanded: no variables, globs, pipes or
 * `&&`. For those, write `sh -c '...'`; the page says so and shows the argv
 * it will send.
 *
 * Errors are the API's own: its `error.field` (spec.resources.gpus) names
 * the form field it is shown under, with aria-invalid; in the editor the
 * message, with its line and column, is shown above the text and the
 * caret put there.
 *
 * JobSpec (pure, loaded by node's test runner too): command splitting and
 * joining, the form's values -> a job document, the document -> YAML text,
 * the API's field -> the form's field, a YAML error's line and column.
 */
'use strict';

var JobSpec = (function () {
    /* Words of a command line as a POSIX shell splits them, nothing
     * expanded: blanks separate words; '...' is literal; "..." is literal
     * but for \" \\ \$ \` and \newline; a backslash outside quotes takes the
     * next character as it is. Returns {argv} or {error}. */
    function splitArgs(line) {
        var argv = [], cur = '', inWord = false, i = 0, s = String(line);
        while (i < s.length) {
            var c = s[i];
            if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
                if (inWord) {
                    argv.push(cur);
                    cur = '';
                    inWord = false;
                }
                i++;
            } else if (c === "'") {
                var end = s.indexOf("'", i + 1);
                if (end < 0)
                    return {error: 'a quote \' is not closed'};
                cur += s.slice(i + 1, end);
                inWord = true;
                i = end + 1;
            } else if (c === '"') {
                i++;
                var closed = false;
                while (i < s.length) {
                    var d = s[i];
                    if (d === '"') {
                        closed = true;
                        i++;
                        break;
                    }
                    if (d === '\\' && i + 1 < s.length && '"\\$`\n'.indexOf(s[i + 1]) >= 0) {
                        if (s[i + 1] !== '\n')
                            cur += s[i + 1];
                        i += 2;
                        continue;
                    }
                    cur += d;
                    i++;
                }
                if (!closed)
                    return {error: 'a quote " is not closed'};
                inWord = true;
            } else if (c === '\\') {
                if (i + 1 >= s.length)
                    return {error: 'a backslash ends the line'};
                if (s[i + 1] !== '\n') {
                    cur += s[i + 1];
                    inWord = true;
                }
                i += 2;
            } else {
                cur += c;
                inWord = true;
                i++;
            }
        }
        if (inWord)
            argv.push(cur);
        return {argv: argv};
    }

    /* An argv as one line that splitArgs reads back as the same words. */
    function joinArgs(argv) {
        return (argv || []).map(function (a) {
            a = String(a);
            if (a !== '' && /^[A-Za-z0-9_@%+=:,.\/-]+$/.test(a))
                return a;
            return "'" + a.replace(/'/g, "'\\''") + "'";
        }).join(' ');
    }

    var INT = /^[0-9]+$/;

    /* The GPU field: a whole number of GPUs ("2"), or a fraction of one GPU
     * below 1 ("0.25", in steps of 0.001) sent as gpuMilli. Anything else
     * goes to the API as written, for its own error. */
    function gpuRequest(text) {
        var t = String(text === undefined || text === null ? '' : text).trim();
        if (t === '')
            return {};
        if (INT.test(t))
            return {gpus: parseInt(t, 10)};
        if (/^0?\.[0-9]+$/.test(t)) {
            var m = Math.round(parseFloat(t) * 1000);
            if (Math.abs(m - parseFloat(t) * 1000) > 1e-6 || m < 1)
                return {error: 'a fraction of one GPU in steps of 0.001 (0.001 to 0.999), got ' + t};
            return {gpuMilli: m};
        }
        if (/^[0-9]*\.[0-9]+$/.test(t))
            return {error: 'whole GPUs, or a fraction of one GPU below 1 (e.g. 0.25), got ' + t};
        return {gpus: t};
    }

    /* A number field's value: an integer or decimal as a number, anything
     * else as the string written (the API says what is wrong with it). */
    function numberOrText(t) {
        return /^[0-9]+(\.[0-9]+)?$/.test(t) ? Number(t) : t;
    }

    /* The form's values -> a job document. values: strings (as the form
     * has them; gpuModels an array). Fields left empty are left out, for
     * their defaults. Returns {doc} or {error: {field, message}} (the
     * API's field names, so that errors show where the API's do).
     * `lenient`: a command that cannot be split, or none, is left out
     * instead (the editor's starting text). */
    function formToSpec(v, lenient) {
        var doc = {apiVersion: 'sluice/v1', kind: 'Job', metadata: {}, spec: {}};
        var s = doc.spec;
        var t = function (k) {
            return String(v[k] === undefined || v[k] === null ? '' : v[k]).trim();
        };
        if (t('name'))
            doc.metadata.name = t('name');
        if (t('team'))
            doc.metadata.team = t('team');
        if (t('queue'))
            s.queue = t('queue');
        if (t('priorityClass'))
            s.priorityClass = t('priorityClass');
        if (t('image'))
            s.image = t('image');
        var cmd = splitArgs(v.command || '');
        if (cmd.error && !lenient)
            return {error: {field: 'spec.command', message: cmd.error}};
        if (!cmd.error && !cmd.argv.length && !lenient)
            return {error: {field: 'spec.command', message: 'required: the program and its arguments'}};
        if (!cmd.error && cmd.argv.length)
            s.command = cmd.argv;
        if (t('tasks'))
            s.tasks = INT.test(t('tasks')) ? parseInt(t('tasks'), 10) : t('tasks');
        var r = {};
        var g = gpuRequest(v.gpus);
        if (g.error && lenient)
            g = {gpus: String(v.gpus).trim()};
        if (g.error)
            return {error: {field: 'spec.resources.gpus', message: g.error}};
        if (g.gpus !== undefined)
            r.gpus = g.gpus;
        if (g.gpuMilli !== undefined)
            r.gpuMilli = g.gpuMilli;
        var models = (Array.isArray(v.gpuModels) ? v.gpuModels : String(v.gpuModels || '').split(','))
            .map(function (m) {
                return String(m).trim();
            }).filter(Boolean);
        if (models.length)
            r.gpuModels = models;
        if (t('cpus'))
            r.cpus = numberOrText(t('cpus'));
        if (t('memory'))
            r.memory = INT.test(t('memory')) ? parseInt(t('memory'), 10) : t('memory');
        if (Object.keys(r).length)
            s.resources = r;
        if (t('maxRuntime'))
            s.maxRuntime = t('maxRuntime');
        if (!Object.keys(doc.metadata).length)
            delete doc.metadata;
        return {doc: doc};
    }

    /* The API's field of a job document -> the form's field, or null when
     * the form has none (the error is shown above the form then). */
    var FIELDS = [
        [/^metadata\.name$/, 'name'],
        [/^metadata\.team$/, 'team'],
        [/^spec\.queue$/, 'queue'],
        [/^spec\.priorityClass$/, 'priorityClass'],
        [/^spec\.resources\.(gpus|gpuMilli)$/, 'gpus'],
        [/^spec\.resources\.gpuModels(\[[0-9]+\])?$/, 'gpuModels'],
        [/^spec\.resources\.(cpus|cpuMilli)$/, 'cpus'],
        [/^spec\.resources\.memory$/, 'memory'],
        [/^spec\.tasks$/, 'tasks'],
        [/^spec\.command(\[[0-9]+\])?$/, 'command'],
        [/^spec\.image$/, 'image'],
        [/^spec\.maxRuntime$/, 'maxRuntime']
    ];

    function formField(apiField) {
        if (!apiField)
            return null;
        for (var i = 0; i < FIELDS.length; i++) {
            if (FIELDS[i][0].test(apiField))
                return FIELDS[i][1];
        }
        return null;
    }

    /* "line 5, column 8: ..." of a YAML error -> {line, column}, or null. */
    function errorPos(message) {
        var m = /\bline ([0-9]+)(?:, column ([0-9]+))?/.exec(String(message || ''));
        return m ? {line: parseInt(m[1], 10), column: m[2] ? parseInt(m[2], 10) : 1} : null;
    }

    /* The character offset of line/column (both from 1) in text. */
    function offsetOf(text, line, column) {
        var off = 0;
        for (var l = 1; l < line; l++) {
            var nl = text.indexOf('\n', off);
            if (nl < 0)
                return text.length;
            off = nl + 1;
        }
        var eol = text.indexOf('\n', off);
        return Math.min(off + Math.max(0, column - 1), eol < 0 ? text.length : eol);
    }

    /* A string as a YAML scalar: plain when every YAML reader (1.1 or
     * 1.2, block or flow context) reads it as that string, else
     * double-quoted (JSON's escapes are YAML's). */
    var RESERVED = /^(true|false|null|yes|no|on|off|y|n|~)$/i;
    var NUMBERISH = /^([-+]?([0-9][0-9_]*)?(\.[0-9_]*)?([eE][-+]?[0-9]+)?|0x[0-9a-f]+|0o[0-7]+|[-+]?\.(inf|nan))$/i;
    var PLAIN = /^[A-Za-z0-9_.\/+-][A-Za-z0-9_ .\/@%+=-]*$/;

    function scalar(v) {
        if (v === null || v === undefined)
            return 'null';
        if (typeof v === 'number' || typeof v === 'boolean')
            return String(v);
        var s = String(v);
        if (s === '' || RESERVED.test(s) || NUMBERISH.test(s) || !PLAIN.test(s) || / $/.test(s) ||
            /^- /.test(s) || s === '-' || /^[0-9]{4}-[0-9]{2}-[0-9]{2}/.test(s))
            return JSON.stringify(s);
        return s;
    }

    function isScalar(v) {
        return v === null || typeof v !== 'object';
    }

    /* A JSON value as block YAML that sluiced reads back as the same
     * value: maps and lists in block style, short lists of scalars in flow
     * style ([python, train.py]), empty ones as {} and []. */
    function toYaml(v) {
        var out = [];
        function emit(val, indent) {
            var pad = new Array(indent + 1).join('  ');
            if (Array.isArray(val)) {
                val.forEach(function (x) {
                    if (isScalar(x)) {
                        out.push(pad + '- ' + scalar(x));
                    } else if (Array.isArray(x) ? !x.length : !Object.keys(x).length) {
                        out.push(pad + '- ' + (Array.isArray(x) ? '[]' : '{}'));
                    } else {
                        var start = out.length;
                        emit(x, indent + 1);
                        /* "- " takes the place of the first line's indent */
                        out[start] = pad + '- ' + out[start].replace(/^\s+/, '');
                    }
                });
                return;
            }
            Object.keys(val).forEach(function (k) {
                var x = val[k], key = pad + scalar(k) + ':';
                if (isScalar(x)) {
                    out.push(key + ' ' + scalar(x));
                } else if (Array.isArray(x)) {
                    if (!x.length) {
                        out.push(key + ' []');
                    } else if (x.every(isScalar) && flowLen(x) <= 72 - key.length) {
                        out.push(key + ' [' + x.map(scalar).join(', ') + ']');
                    } else {
                        out.push(key);
                        emit(x, indent + 1);
                    }
                } else if (!Object.keys(x).length) {
                    out.push(key + ' {}');
                } else {
                    out.push(key);
                    emit(x, indent + 1);
                }
            });
        }
        function flowLen(a) {
            return a.map(scalar).join(', ').length + 3;
        }
        if (isScalar(v))
            return scalar(v) + '\n';
        emit(v, 0);
        return out.join('\n') + '\n';
    }

    /* The stored (normalised) document of a job -> what to submit again:
     * the same fields, without empty labels, memory in binary units. */
    function resubmittable(doc) {
        var d = JSON.parse(JSON.stringify(doc || {}));
        if (d.metadata && d.metadata.labels && !Object.keys(d.metadata.labels).length)
            delete d.metadata.labels;
        var r = d.spec && d.spec.resources;
        if (r && typeof r.memory === 'number') {
            /* bytes as people write them: 1073741824 -> 1Gi */
            var units = [['Ti', 1099511627776], ['Gi', 1073741824], ['Mi', 1048576], ['Ki', 1024]];
            for (var i = 0; i < units.length; i++) {
                if (r.memory >= units[i][1] && r.memory % units[i][1] === 0) {
                    r.memory = r.memory / units[i][1] + units[i][0];
                    break;
                }
            }
        }
        return d;
    }

    return {
        splitArgs: splitArgs, joinArgs: joinArgs, gpuRequest: gpuRequest, formToSpec: formToSpec,
        formField: formField, errorPos: errorPos, offsetOf: offsetOf, scalar: scalar, toYaml: toYaml,
        resubmittable: resubmittable
    };
})();

if (typeof module !== 'undefined' && module.exports)
    module.exports = JobSpec;

if (typeof App !== 'undefined') (function () {
    var h = Dom.h;

    function fill(sel, opts, value) {
        Dom.clear(sel);
        opts.forEach(function (o) {
            sel.appendChild(h('option', {value: o[0]}, o[1]));
        });
        sel.value = opts.some(function (o) {
            return o[0] === value;
        }) ? value : opts.length ? opts[0][0] : '';
    }

    /* The admission verdict of a dry run. */
    function verdict(v) {
        var ok = v.allowed !== false;
        return h('div', {class: 'msg ' + (ok ? 'msg-ok' : 'msg-error'), role: 'status'},
            h('strong', null, ok ? 'Dry run: the job would be admitted.' : 'Dry run: the job would not be admitted.'),
            Dom.kv([
                ['Allowed', ok ? 'yes' : 'no'],
                ['Team', v.team],
                ['Queue', v.queue],
                ['Priority class', v.priority_class],
                ['Network', v.network],
                ['Datasets', v.datasets && v.datasets.length ? v.datasets.join(', ') : 'none'],
                ['Demoted to', v.demoted_to ? h('span', null, Dom.badge(v.demoted_to, 'warn'),
                    ' (a budget of the team demotes it)') : 'not demoted']
            ]));
    }

    App.page('/submit', {
        title: 'Submit a job',
        render: function (ctx) {
            ctx.main.appendChild(h('h1', null, 'Submit a job'));
            if (!ctx.can('submit')) {
                ctx.main.appendChild(Dom.message('Your role (' + ctx.who.role + ') may not submit jobs: ' +
                    'members, team-admins and admins may.', 'info'));
                return;
            }
            var admin = ctx.can('admin');
            var mode = ctx.query.get('mode') === 'yaml' ? 'yaml' : 'form';
            var yamlDirty = false;
            var busy = false;
            var data = {teams: [], queues: [], classes: []};

            /* the form */
            var fName = Dom.field({label: 'Name', name: 'name', placeholder: 'e.g. train-resnet',
                hint: 'optional: 1 to 63 of a-z, 0-9 and -', attrs: {autocomplete: 'off', spellcheck: 'false'}});
            var fTeam = admin ?
                Dom.field({label: 'Team', name: 'team', options: [[ctx.who.team, ctx.who.team]], value: ctx.who.team}) :
                Dom.field({label: 'Team', name: 'team', value: ctx.who.team, hint: 'your team',
                    attrs: {readonly: true}});
            var fQueue = Dom.field({label: 'Queue', name: 'queue', options: [['', 'the team\u2019s default']]});
            var fClass = Dom.field({label: 'Priority class', name: 'priorityClass', options: [['', 'the default']]});
            var fGpus = Dom.field({label: 'GPUs per task', name: 'gpus', value: '1',
                hint: 'whole GPUs (0, 1, 2\u2026), or a fraction of one below 1 (0.25) sent as gpuMilli',
                attrs: {inputmode: 'decimal', autocomplete: 'off'}});
            var models = h('fieldset', {class: 'field submit-models', 'data-field': 'gpuModels'},
                h('legend', null, 'GPU models'),
                h('div', {class: 'submit-checks'}, h('span', {class: 'muted'}, 'Loading\u2026')),
                h('small', {class: 'hint'}, 'any model when none is ticked'),
                h('div', {class: 'field-error', id: 'f-gpuModels-error', 'aria-live': 'polite'}));
            var fCpus = Dom.field({label: 'CPUs per task', name: 'cpus', placeholder: '1',
                hint: 'e.g. 4, 0.5 or 250m', attrs: {inputmode: 'decimal', autocomplete: 'off'}});
            var fMem = Dom.field({label: 'Memory per task', name: 'memory', placeholder: '1Gi',
                hint: 'e.g. 16Gi, 512Mi', attrs: {autocomplete: 'off', spellcheck: 'false'}});
            var fTasks = Dom.field({label: 'Tasks', name: 'tasks', type: 'number', placeholder: '1',
                hint: 'more than 1: a gang, all start together', attrs: {min: 1, max: 1024}});
            var fCmd = Dom.field({label: 'Command', name: 'command', required: true,
                placeholder: 'python train.py --epochs 3',
                hint: 'split into words as a shell does (\'single\', "double" quotes, \\), but nothing is ' +
                    'expanded: for pipes, variables or &&, write sh -c \'\u2026\'',
                attrs: {autocomplete: 'off', spellcheck: 'false', class: 'mono'}});
            var argvOut = h('output', {class: 'submit-argv mono', for: 'f-command', 'aria-live': 'polite'});
            fCmd.insertBefore(argvOut, fCmd.querySelector('.field-error'));
            var fImage = Dom.field({label: 'Image', name: 'image', placeholder: 'registry/ml/train@sha256:\u2026',
                hint: 'optional; policy may ask for a digest', attrs: {autocomplete: 'off', spellcheck: 'false'}});
            var fMax = Dom.field({label: 'Max runtime', name: 'maxRuntime', placeholder: 'e.g. 2h, 90m',
                hint: 'optional: the job ends Timeout after it', attrs: {autocomplete: 'off', spellcheck: 'false'}});

            var formPane = h('div', {class: 'submit-form', id: 'submit-form-pane'},
                h('fieldset', {class: 'submit-group'}, h('legend', null, 'Job'), fName, fTeam, fQueue, fClass),
                h('fieldset', {class: 'submit-group'}, h('legend', null, 'Resources per task'), fGpus, fCpus, fMem, fTasks, models),
                h('fieldset', {class: 'submit-group submit-wide'}, h('legend', null, 'What to run'), fCmd, fImage, fMax));

            /* the editor */
            var yamlErr = h('div', {class: 'submit-yaml-error', id: 'spec-yaml-error'});
            var yaml = h('textarea', {id: 'f-yaml', name: 'yaml', rows: 22, spellcheck: 'false', class: 'submit-yaml',
                autocomplete: 'off', 'aria-describedby': 'spec-yaml-error spec-yaml-hint'});
            var refill = h('button', {type: 'button', hidden: true}, 'Replace with the form\u2019s values');
            var yamlPane = h('div', {class: 'submit-yaml-pane', id: 'submit-yaml-pane'},
                h('label', {for: 'f-yaml'}, 'Job spec (YAML or JSON)'),
                h('small', {class: 'hint', id: 'spec-yaml-hint'}, 'The whole document as docs/jobspec.md describes it. ',
                    'The form does not read it back: each keeps its own text.'),
                yamlErr, yaml, h('div', {class: 'toolbar'}, refill));

            var tabForm = h('button', {type: 'button', 'aria-pressed': 'true', 'aria-controls': 'submit-form-pane'}, 'Form');
            var tabYaml = h('button', {type: 'button', 'aria-pressed': 'false', 'aria-controls': 'submit-yaml-pane'}, 'YAML editor');
            var result = h('div', {class: 'submit-result'});
            var dryBtn = h('button', {type: 'button'}, 'Dry run');
            var subBtn = h('button', {type: 'submit', class: 'primary'}, 'Submit');
            var form = h('form', {class: 'submit', novalidate: true, 'aria-label': 'New job'},
                h('div', {class: 'toolbar'}, h('div', {class: 'segmented', role: 'group', 'aria-label': 'Write the job as'},
                    tabForm, tabYaml)),
                formPane, yamlPane, result,
                h('div', {class: 'toolbar submit-actions'}, dryBtn, subBtn,
                    h('span', {class: 'muted'}, 'A dry run checks admission, quotas and policy; nothing is created.')));
            ctx.main.appendChild(h('p', {class: 'muted'}, 'Fill in the common fields, or write the whole spec in ',
                'the YAML editor. Run it dry first to see whether and where it would be admitted.'));
            ctx.main.appendChild(form);

            function values() {
                var el = form.elements;
                var checked = Array.prototype.map.call(models.querySelectorAll('input[type=checkbox]:checked'), function (c) {
                    return c.value;
                });
                var typed = models.querySelector('input[type=text]');
                return {
                    name: el.name.value, team: admin ? el.team.value : '', queue: el.queue.value,
                    priorityClass: el.priorityClass.value, gpus: el.gpus.value,
                    gpuModels: typed ? typed.value : checked, cpus: el.cpus.value, memory: el.memory.value,
                    tasks: el.tasks.value, command: el.command.value, image: el.image.value,
                    maxRuntime: el.maxRuntime.value
                };
            }

            function showArgv() {
                var r = JobSpec.splitArgs(form.elements.command.value);
                argvOut.textContent = r.error ? r.error : r.argv.length ? 'argv: ' + JSON.stringify(r.argv) : '';
                argvOut.classList.toggle('submit-argv-bad', !!r.error);
            }
            form.elements.command.addEventListener('input', showArgv);

            function fromForm() {
                return JobSpec.toYaml(JobSpec.formToSpec(values(), true).doc);
            }

            function setMode(m, focus) {
                mode = m;
                if (m === 'yaml' && (!yamlDirty || !yaml.value.trim())) {
                    yaml.value = fromForm();
                    yamlDirty = false;
                }
                refill.hidden = !(m === 'yaml' && yamlDirty);
                formPane.hidden = m !== 'form';
                yamlPane.hidden = m !== 'yaml';
                tabForm.setAttribute('aria-pressed', String(m === 'form'));
                tabYaml.setAttribute('aria-pressed', String(m === 'yaml'));
                clearErrors();
                ctx.setQuery({mode: m === 'yaml' ? 'yaml' : null, from: ctx.query.get('from')});
                if (focus)
                    (m === 'yaml' ? yaml : form.elements.name).focus();
            }
            tabForm.addEventListener('click', function () {
                setMode('form', true);
            });
            tabYaml.addEventListener('click', function () {
                setMode('yaml', true);
            });
            yaml.addEventListener('input', function () {
                yamlDirty = true;
                refill.hidden = false;
            });
            refill.addEventListener('click', function () {
                yaml.value = fromForm();
                yamlDirty = false;
                refill.hidden = true;
                yaml.focus();
            });

            function clearErrors() {
                Dom.fieldErrors(formPane, null);
                Dom.clear(yamlErr);
                yaml.removeAttribute('aria-invalid');
                Dom.clear(result);
            }

            /* An error of the API where it belongs: under its field in the
             * form (or above it), above the editor with the caret at its
             * line and column. */
            function showError(err) {
                clearErrors();
                if (mode === 'form') {
                    Dom.fieldErrors(formPane, err, JobSpec.formField, result);
                    return;
                }
                yamlErr.appendChild(Dom.message(err));
                yaml.setAttribute('aria-invalid', 'true');
                var pos = JobSpec.errorPos(err.message);
                if (pos) {
                    var at = JobSpec.offsetOf(yaml.value, pos.line, pos.column);
                    yaml.focus();
                    yaml.setSelectionRange(at, Math.min(at + 1, yaml.value.length));
                    /* bring the line into view: lines are of one height */
                    var lh = parseFloat(getComputedStyle(yaml).lineHeight) || 18;
                    yaml.scrollTop = Math.max(0, (pos.line - 3) * lh);
                    yamlErr.querySelector('.msg').appendChild(h('span', null, ' (the caret is at line ' + pos.line +
                        ', column ' + pos.column + ')'));
                } else {
                    yaml.focus();
                }
            }

            /* The request of the mode shown: {body, type} or an error
             * found before sending (a command that cannot be split). */
            function request() {
                if (mode === 'yaml')
                    return {body: yaml.value, type: 'application/yaml'};
                var r = JobSpec.formToSpec(values());
                if (r.error)
                    return {error: {code: 'invalid', field: r.error.field, message: r.error.message}};
                return {body: r.doc};
            }

            function send(dry) {
                if (busy)
                    return;
                var r = request();
                if (r.error) {
                    showError(r.error);
                    return;
                }
                busy = true;
                dryBtn.disabled = subBtn.disabled = true;
                form.setAttribute('aria-busy', 'true');
                Api.post('/v1/jobs', r.body, {type: r.type, params: dry ? {dry_run: 'true'} : null}).then(function (ans) {
                    if (!ctx.alive())
                        return;
                    clearErrors();
                    if (dry) {
                        result.appendChild(verdict(ans));
                        return;
                    }
                    Dom.toast('Job ' + ans.id + ' submitted');
                    ctx.navigate('/ui/jobs/' + ans.id);
                }, function (e) {
                    if (ctx.alive())
                        showError(e);
                }).then(function () {
                    busy = false;
                    dryBtn.disabled = subBtn.disabled = false;
                    form.removeAttribute('aria-busy');
                });
            }
            dryBtn.addEventListener('click', function () {
                send(true);
            });
            form.addEventListener('submit', function (ev) {
                ev.preventDefault();
                send(false);
            });

            function fillQueues() {
                var team = admin ? form.elements.team.value : ctx.who.team;
                var t = data.teams.filter(function (x) {
                    return x.name === team;
                })[0];
                var opts = [['', 'the team\u2019s default' + (t && t.default_queue ? ' (' + t.default_queue + ')' : '')]];
                data.queues.forEach(function (q) {
                    if (q.team === team)
                        opts.push([q.name, q.name]);
                });
                fill(form.elements.queue, opts, form.elements.queue.value);
            }

            JobsData.lists().then(function (c) {
                if (!ctx.alive())
                    return;
                data = c;
                if (admin) {
                    fill(form.elements.team, c.teams.map(function (t) {
                        return [t.name, t.name];
                    }), form.elements.team.value);
                    form.elements.team.addEventListener('change', fillQueues);
                }
                fillQueues();
                var def = c.classes.filter(function (x) {
                    return x.default;
                })[0];
                fill(form.elements.priorityClass, [['', 'the default' + (def ? ' (' + def.name + ')' : '')]].concat(
                    c.classes.map(function (x) {
                        return [x.name, x.name + (x.preemptible ? '' : ', not preemptible') +
                            (x.opportunistic ? ', opportunistic' : '')];
                    })), form.elements.priorityClass.value);
            });
            JobsData.models().then(function (list) {
                if (!ctx.alive())
                    return;
                var box = Dom.clear(models.querySelector('.submit-checks'));
                if (list.length) {
                    list.forEach(function (m, i) {
                        box.appendChild(h('label', {class: 'submit-check'},
                            h('input', {type: 'checkbox', value: m, name: 'gpuModel', id: 'f-gpuModel-' + i}), ' ' + m));
                    });
                } else {
                    box.appendChild(h('input', {type: 'text', 'aria-label': 'GPU models, separated by commas',
                        placeholder: 'e.g. H100, A100', autocomplete: 'off'}));
                }
            });

            /* ?from=ID: the editor starts with that job's spec. */
            var from = ctx.query.get('from');
            if (from && /^[0-9]+$/.test(from)) {
                Api.get('/v1/jobs/' + from).then(function (job) {
                    if (!ctx.alive())
                        return;
                    yaml.value = JobSpec.toYaml(JobSpec.resubmittable(job.spec));
                    yamlDirty = true;
                    setMode('yaml', false);
                }, function (e) {
                    if (ctx.alive())
                        result.appendChild(Dom.message(e));
                });
            }
            showArgv();
            setMode(mode, false);
        }
    });
})();
