/*
 * 99-main.js - starts the dashboard once every page has registered
 * (the bundle is one deferred script: the document is parsed by now).
 */
'use strict';

App.start();
