module github.com/timebudget/budget

go 1.26
