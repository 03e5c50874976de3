/* 00-placeholder.js - stands in for the dashboard's scripts until they land:
 * it only shows that app.js loaded, and that uPlot came before it. */
"use strict";
document.addEventListener("DOMContentLoaded", function () {
    var main = document.getElementById("app");
    if (main)
        main.textContent = "Sluice dashboard: app.js loaded (uPlot " +
            (typeof uPlot === "function" ? "present" : "missing") + ").";
});
