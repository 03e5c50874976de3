/*
 * submit.test.js - the submit page's pure parts (web/js/45-submit.js):
 * command splitting, the form -> job document, the API's field -> the
 * form's field, YAML errors' positions and the YAML writer.
 */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const S = require('../js/45-submit.js');

test('splitArgs: words, quotes and backslashes as a shell, nothing expanded', () => {
    assert.deepStrictEqual(S.splitArgs('python train.py --epochs 3').argv, ['python', 'train.py', '--epochs', '3']);
    assert.deepStrictEqual(S.splitArgs('  a\t b\n').argv, ['a', 'b']);
    assert.deepStrictEqual(S.splitArgs("sh -c 'echo $HOME | wc -c'").argv, ['sh', '-c', 'echo $HOME | wc -c']);
    assert.deepStrictEqual(S.splitArgs('echo "a \\"b\\" \\$x \\n"').argv, ['echo', 'a "b" $x \\n']);
    assert.deepStrictEqual(S.splitArgs('a\\ b c').argv, ['a b', 'c']);
    assert.deepStrictEqual(S.splitArgs("'' \"\" x").argv, ['', '', 'x']);
    assert.deepStrictEqual(S.splitArgs("pre'fix'\"ed\"").argv, ['prefixed']);
    assert.deepStrictEqual(S.splitArgs('$HOME *.py').argv, ['$HOME', '*.py']);
    assert.deepStrictEqual(S.splitArgs('').argv, []);
});

test('splitArgs: an open quote or a trailing backslash is an error', () => {
    assert.match(S.splitArgs("echo 'a").error, /not closed/);
    assert.match(S.splitArgs('echo "a').error, /not closed/);
    assert.match(S.splitArgs('echo a\\').error, /backslash/);
});

test('joinArgs: splitArgs reads it back as the same words', () => {
    const cases = [['python', 'x.py'], ['sh', '-c', "echo 'hi' && ls | wc"], ['', 'a b', '$X', 'it\'s'], ['a"b\\c']];
    for (const argv of cases)
        assert.deepStrictEqual(S.splitArgs(S.joinArgs(argv)).argv, argv);
    assert.strictEqual(S.joinArgs(['python', 'train.py', '--lr=0.1']), 'python train.py --lr=0.1');
});

test('gpuRequest: whole GPUs, or a fraction below one as gpuMilli', () => {
    assert.deepStrictEqual(S.gpuRequest(''), {});
    assert.deepStrictEqual(S.gpuRequest('2'), {gpus: 2});
    assert.deepStrictEqual(S.gpuRequest('0'), {gpus: 0});
    assert.deepStrictEqual(S.gpuRequest('0.25'), {gpuMilli: 250});
    assert.deepStrictEqual(S.gpuRequest('.5'), {gpuMilli: 500});
    assert.deepStrictEqual(S.gpuRequest('0.001'), {gpuMilli: 1});
    assert.match(S.gpuRequest('0.0001').error, /steps of 0.001/);
    assert.match(S.gpuRequest('1.5').error, /fraction of one GPU below 1/);
    assert.deepStrictEqual(S.gpuRequest('two'), {gpus: 'two'}); /* the API says what is wrong */
});

test('formToSpec: the common fields, empty ones left out for their defaults', () => {
    const r = S.formToSpec({name: 'mnist', team: '', queue: 'research', priorityClass: 'batch', gpus: '0.5',
        gpuModels: ['H100', 'A100'], cpus: '4', memory: '16Gi', tasks: '2', command: 'python /opt/mnist.py --epochs=1',
        image: 'reg/ml@sha256:ab', maxRuntime: '2h'});
    assert.deepStrictEqual(r.doc, {
        apiVersion: 'sluice/v1', kind: 'Job', metadata: {name: 'mnist'},
        spec: {queue: 'research', priorityClass: 'batch', image: 'reg/ml@sha256:ab',
            command: ['python', '/opt/mnist.py', '--epochs=1'], tasks: 2,
            resources: {gpuMilli: 500, gpuModels: ['H100', 'A100'], cpus: 4, memory: '16Gi'}, maxRuntime: '2h'}
    });
    const min = S.formToSpec({command: 'sleep 60', gpus: ''});
    assert.deepStrictEqual(min.doc, {apiVersion: 'sluice/v1', kind: 'Job', spec: {command: ['sleep', '60']}});
});

test('formToSpec: a team, models as text, CPUs as milli, memory in bytes, bad numbers as written', () => {
    const r = S.formToSpec({team: 'nlp', command: 'x', gpus: '1', gpuModels: ' H100, ,T4 ', cpus: '250m',
        memory: '1073741824', tasks: 'many'});
    assert.strictEqual(r.doc.metadata.team, 'nlp');
    assert.deepStrictEqual(r.doc.spec.resources, {gpus: 1, gpuModels: ['H100', 'T4'], cpus: '250m', memory: 1073741824});
    assert.strictEqual(r.doc.spec.tasks, 'many');
    assert.strictEqual(S.formToSpec({command: 'x', cpus: '0.5'}).doc.spec.resources.cpus, 0.5);
});

test('formToSpec: errors name the API\'s field', () => {
    assert.deepStrictEqual(S.formToSpec({command: ''}).error.field, 'spec.command');
    assert.deepStrictEqual(S.formToSpec({command: "echo 'x"}).error.field, 'spec.command');
    assert.deepStrictEqual(S.formToSpec({command: 'x', gpus: '1.5'}).error.field, 'spec.resources.gpus');
});

test('formToSpec lenient: the editor\'s starting text, whatever the form holds', () => {
    assert.deepStrictEqual(S.formToSpec({command: '', gpus: '1'}, true).doc,
        {apiVersion: 'sluice/v1', kind: 'Job', spec: {resources: {gpus: 1}}});
    assert.strictEqual(S.formToSpec({command: "a 'b", gpus: '1.5'}, true).doc.spec.resources.gpus, '1.5');
});

test('formField: the API\'s field -> the form\'s', () => {
    const m = {
        'metadata.name': 'name', 'metadata.team': 'team', 'spec.queue': 'queue', 'spec.priorityClass': 'priorityClass',
        'spec.resources.gpus': 'gpus', 'spec.resources.gpuMilli': 'gpus', 'spec.resources.gpuModels': 'gpuModels',
        'spec.resources.gpuModels[1]': 'gpuModels', 'spec.resources.cpus': 'cpus', 'spec.resources.cpuMilli': 'cpus',
        'spec.resources.memory': 'memory', 'spec.tasks': 'tasks', 'spec.command': 'command',
        'spec.command[2]': 'command', 'spec.image': 'image', 'spec.maxRuntime': 'maxRuntime'
    };
    for (const k of Object.keys(m))
        assert.strictEqual(S.formField(k), m[k], k);
    for (const k of ['spec.env.X', 'spec.network', 'spec.resources', 'spec.tasksx', 'metadata.labels', null, ''])
        assert.strictEqual(S.formField(k), null, String(k));
});

test('errorPos and offsetOf: a YAML error\'s line and column, and where that is', () => {
    assert.deepStrictEqual(S.errorPos('line 5, column 8: did not find expected'), {line: 5, column: 8});
    assert.deepStrictEqual(S.errorPos('line 3: x'), {line: 3, column: 1});
    assert.strictEqual(S.errorPos('must be an integer'), null);
    const text = 'a: 1\nbb: 2\nccc: 3';
    assert.strictEqual(S.offsetOf(text, 1, 1), 0);
    assert.strictEqual(S.offsetOf(text, 2, 2), 6);
    assert.strictEqual(S.offsetOf(text, 3, 99), text.length);
    assert.strictEqual(S.offsetOf(text, 9, 1), text.length);
    assert.strictEqual(S.offsetOf(text, 2, 99), 10); /* the line's end */
});

test('scalar: plain only when no YAML reader could read it as anything else', () => {
    for (const s of ['python', '16Gi', '2h', './run.sh', '-x', 'a b', 'sluice/v1', 'x@y', 'A100-80GB'])
        assert.strictEqual(S.scalar(s), s, s);
    for (const s of ['', 'true', 'No', 'null', '~', '1', '010', '1e3', '-3', '.5', '0x10', '.inf', 'a: b', 'a,b',
        '[x]', 'x ', '- a', '#x', '@x', '%x', '*x', '&x', '!x', '2026-01-01', 'a #b', "it's", 'sha256:ab', 'é'])
        assert.strictEqual(S.scalar(s), JSON.stringify(s), s);
    assert.strictEqual(S.scalar(3), '3');
    assert.strictEqual(S.scalar(false), 'false');
});

test('toYaml: block YAML, short lists of scalars in flow style', () => {
    const doc = {apiVersion: 'sluice/v1', kind: 'Job', metadata: {name: 'x', labels: {}},
        spec: {command: ['sh', '-c', 'echo $X; ls | wc'], env: {EPOCHS: '1'}, datasets: [],
            resources: {gpus: 1}, list: [{a: 1, b: [2]}, 'x', [], {}]}};
    assert.strictEqual(S.toYaml(doc), [
        'apiVersion: sluice/v1',
        'kind: Job',
        'metadata:',
        '  name: x',
        '  labels: {}',
        'spec:',
        '  command: [sh, -c, "echo $X; ls | wc"]',
        '  env:',
        '    EPOCHS: "1"',
        '  datasets: []',
        '  resources:',
        '    gpus: 1',
        '  list:',
        '    - a: 1',
        '      b: [2]',
        '    - x',
        '    - []',
        '    - {}',
        ''].join('\n'));
    const long = Array.from({length: 30}, (_, i) => 'arg' + i);
    assert.match(S.toYaml({command: long}), /^command:\n {2}- arg0\n {2}- arg1\n/);
});

test('resubmittable: a copy without empty labels, memory in binary units', () => {
    const doc = {metadata: {name: 'x', labels: {}}, spec: {resources: {memory: 17179869184}}};
    assert.deepStrictEqual(S.resubmittable(doc), {metadata: {name: 'x'}, spec: {resources: {memory: '16Gi'}}});
    assert.deepStrictEqual(doc.metadata.labels, {}); /* not changed */
    assert.strictEqual(S.resubmittable({spec: {resources: {memory: 1536 * 1048576}}}).spec.resources.memory, '1536Mi');
    assert.strictEqual(S.resubmittable({spec: {resources: {memory: 1000}}}).spec.resources.memory, 1000);
});
