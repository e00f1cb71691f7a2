// Enhancements only: every page works without this file, except the sign-in link page,
// whose token is in the URL fragment (never sent to the server) and is read here.
'use strict';
document.addEventListener('DOMContentLoaded', function () {
  var tokenField = document.getElementById('link-token');
  if (tokenField && location.hash.length > 1) {
    tokenField.value = location.hash.slice(1);
    // The token leaves the address bar and the history entry at once.
    history.replaceState(null, '', location.pathname);
  }

  // Send test and Push to CRM can take up to the webhook timeout: say that it is running.
  document.querySelectorAll('form[data-busy]').forEach(function (form) {
    form.addEventListener('submit', function () {
      var button = form.querySelector('button[type=submit]');
      var status = document.getElementById(form.getAttribute('data-busy'));
      if (button) button.setAttribute('aria-disabled', 'true');
      if (status) status.textContent = 'Sending… this can take up to the webhook timeout.';
    });
  });

  // Copy buttons: copy the text of the element they name.
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    button.hidden = false;
    button.addEventListener('click', function () {
      var source = document.getElementById(button.getAttribute('data-copy'));
      if (source && navigator.clipboard) navigator.clipboard.writeText((source.value || source.textContent).trim()).then(function () { button.textContent = 'Copied'; });
    });
  });

});
